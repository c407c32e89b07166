//! A throwaway daemon on a zone's host, for `ouro bench --relay --zone`: a folder in the
//! host's temp dir with an ouro home of its own and a wrapper that runs the zone's ouro with
//! it, so a measurement never touches the user's daemon or clones there.

use super::super::{DaemonError, Paths};
use super::{Zone, Zones, ssh};
use crate::text::shell_quote;

pub struct Scratch {
    paths: Paths,
    zone: Zone,
    /// The folder on the host.
    pub dir: String,
}

impl Scratch {
    /// Makes the folder on the host of the zone `name` (from `user`'s zones), with `files`
    /// (name, text; written executable) and `setup` (a shell line run in it), and records the
    /// zone in `paths`' home with the wrapper as its ouro. The wrapper's daemon gets `env`,
    /// whose values the host's shell expands with `$d` as the folder.
    pub async fn make(
        user: &Paths,
        paths: &Paths,
        name: &str,
        files: &[(&str, &str)],
        setup: &str,
        env: &[(&str, &str)],
    ) -> Result<Scratch, DaemonError> {
        let mut zone = Zones::load(&user.home)?.named(name)?;
        let mut wrapper = String::from(
            "#!/bin/sh\nd=$(cd \"$(dirname \"$0\")\" && pwd)\nunset XDG_RUNTIME_DIR\nexport OURO_HOME=\"$d/home\"\n",
        );
        for (key, value) in env {
            wrapper.push_str(&format!("export {key}=\"{value}\"\n"));
        }
        wrapper.push_str(&format!("exec {} \"$@\"\n", zone.remote_ouro()));
        // Removed again by the trap unless every step worked.
        let mut script = String::from(
            "set -e\nd=$(mktemp -d \"${TMPDIR:-/tmp}/ouro-bench-XXXXXX\")\ntrap 'rm -rf \"$d\"' EXIT\ncd \"$d\"\nmkdir home project\n",
        );
        for (file, text) in files.iter().chain([&("ouro", wrapper.as_str())]) {
            script.push_str(&format!(
                "printf '%s' {} > {file}\nchmod 755 {file}\n",
                shell_quote(text)
            ));
        }
        script.push_str(setup);
        script.push_str("\ntrap - EXIT\necho \"$d\"\n");
        let made = ssh::script(paths, &zone, &script).await;
        let dir = match made {
            Ok(stdout) => stdout.lines().last().unwrap_or("").trim().to_string(),
            Err(e) => {
                ssh::close_master(paths, name);
                return Err(e);
            }
        };
        zone.ouro = Some(format!("{dir}/ouro"));
        let scratch = Scratch {
            paths: paths.clone(),
            zone,
            dir,
        };
        if !scratch.dir.starts_with('/') {
            scratch.remove().await;
            return Err(DaemonError::Client(format!(
                "the zone {name} made no scratch folder"
            )));
        }
        let recorded = Zones::load(&paths.home).and_then(|mut zones| {
            zones.insert(scratch.zone.clone());
            zones.save(&paths.home)
        });
        if let Err(e) = recorded {
            scratch.remove().await;
            return Err(e);
        }
        Ok(scratch)
    }

    /// ssh's program and arguments running `remote` in a terminal on the host, through the
    /// zone's master connection: what a plain `ssh -t` does.
    pub fn tty_argv(&self, remote: &str) -> Result<(String, Vec<String>), DaemonError> {
        ssh::argv(&self.paths, &self.zone, remote, true)
    }

    /// Stops the scratch daemon, removes the folder and ends the master connection.
    pub async fn remove(self) {
        if self.dir.starts_with('/') {
            let dir = shell_quote(&self.dir);
            let _ = ssh::script(
                &self.paths,
                &self.zone,
                &format!("{dir}/ouro daemon stop >/dev/null 2>&1; rm -rf {dir}"),
            )
            .await;
        }
        ssh::close_master(&self.paths, &self.zone.name);
    }
}
