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
    /// zone in `paths`' home with the wrapper as its ouro. The wrapper's daemon gets `env`
    /// (values taken as written, `$d` being the folder).
    pub async fn make(
        user: &Paths,
        paths: &Paths,
        name: &str,
        files: &[(&str, &str)],
        setup: &str,
        env: &[(&str, &str)],
    ) -> Result<Scratch, DaemonError> {
        let real = Zones::load(&user.home)?.named(name)?;
        let mut script = String::from(
            "set -e\nd=$(mktemp -d \"${TMPDIR:-/tmp}/ouro-bench-XXXXXX\")\ncd \"$d\"\nmkdir home project\n",
        );
        for (file, text) in files {
            script.push_str(&format!(
                "printf '%s' {} > {file}\nchmod 755 {file}\n",
                shell_quote(text)
            ));
        }
        script.push_str(setup);
        script.push('\n');
        let mut wrapper =
            String::from("#!/bin/sh\nunset XDG_RUNTIME_DIR\nexport OURO_HOME=\"$d/home\"\n");
        for (key, value) in env {
            wrapper.push_str(&format!("export {key}=\"{value}\"\n"));
        }
        wrapper.push_str(&format!("exec {} \"$@\"\n", real.remote_ouro()));
        // `$d` in the wrapper is the folder, written in as the host's shell expands it.
        script.push_str(&format!(
            "cat > ouro <<OURO_WRAPPER\n{}OURO_WRAPPER\nchmod 755 ouro\necho \"$d\"\n",
            wrapper.replace('\\', "\\\\").replace("\"$@\"", "\"\\$@\"")
        ));
        let mut zone = real;
        let stdout = ssh::script(paths, &zone, &script).await?;
        let dir = stdout.lines().last().unwrap_or("").trim().to_string();
        if !dir.starts_with('/') {
            return Err(DaemonError::Client(format!(
                "the zone {name} made no scratch folder"
            )));
        }
        zone.ouro = Some(format!("{dir}/ouro"));
        let mut zones = Zones::load(&paths.home)?;
        zones.insert(zone.clone());
        zones.save(&paths.home)?;
        Ok(Scratch {
            paths: paths.clone(),
            zone,
            dir,
        })
    }

    /// ssh's program and arguments running `remote` in a terminal on the host, through the
    /// zone's master connection: what a plain `ssh -t` does.
    pub fn tty_argv(&self, remote: &str) -> Result<(String, Vec<String>), DaemonError> {
        ssh::argv(&self.paths, &self.zone, remote, true)
    }

    /// Stops the scratch daemon, removes the folder and ends the master connection.
    pub async fn remove(self) {
        let dir = shell_quote(&self.dir);
        let _ = ssh::script(
            &self.paths,
            &self.zone,
            &format!("{dir}/ouro daemon stop >/dev/null 2>&1; rm -rf {dir}"),
        )
        .await;
        ssh::close_master(&self.paths, &self.zone.name);
    }
}
