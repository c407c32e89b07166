//! `zones.json` in ouro's home: the zones by name, written whole and atomically, readable only
//! by the user.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::super::DaemonError;

const FILE: &str = "zones.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    pub name: String,
    /// `ssh://[user@]host[:port]`, or a `Host` alias of the user's ssh config.
    pub target: String,
    /// Where `ouro zone install` put ouro on the host; `None`: `ouro` on the login's `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ouro: Option<String>,
}

impl Zone {
    /// The command that runs ouro on the host, as the remote shell reads it.
    pub fn remote_ouro(&self) -> String {
        match &self.ouro {
            Some(path) => crate::text::shell_quote(path),
            None => "ouro".into(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Zones {
    zones: Vec<Zone>,
}

impl Zones {
    pub fn load(home: &Path) -> Result<Zones, DaemonError> {
        let path = home.join(FILE);
        match crate::sys::atomic::read_json(&path) {
            Ok(zones) => Ok(zones.unwrap_or_default()),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                Err(DaemonError::Client(format!(
                    "{} is not a zones file ({e}); fix it or remove it",
                    path.display()
                )))
            }
            Err(source) => Err(DaemonError::Io {
                action: "read",
                path,
                source,
            }),
        }
    }

    pub fn save(&self, home: &Path) -> Result<(), DaemonError> {
        let path = home.join(FILE);
        let text = serde_json::to_vec_pretty(self).unwrap_or_default();
        crate::sys::atomic::write_private(&path, &text).map_err(|source| DaemonError::Io {
            action: "write",
            path,
            source,
        })
    }

    pub fn all(&self) -> &[Zone] {
        &self.zones
    }

    pub fn get(&self, name: &str) -> Option<&Zone> {
        self.zones.iter().find(|z| z.name == name)
    }

    /// The zone `name`, or an error saying how to see the zones there are.
    pub fn named(&self, name: &str) -> Result<Zone, DaemonError> {
        self.get(name).cloned().ok_or_else(|| {
            DaemonError::Client(format!(
                "there is no zone named `{name}`; `ouro zone list` shows them"
            ))
        })
    }

    /// Adds `zone`, or replaces the one of its name.
    pub fn insert(&mut self, zone: Zone) {
        self.remove(&zone.name);
        self.zones.push(zone);
        self.zones.sort_by(|a, b| a.name.cmp(&b.name));
    }

    pub fn remove(&mut self, name: &str) {
        self.zones.retain(|z| z.name != name);
    }
}
