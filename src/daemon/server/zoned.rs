//! Clones in zones, as this daemon serves them: it keeps their records (which zone, which
//! directory there) and relays every request about them to the zone's daemon, which owns
//! their brains.

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::conn::Conn;
use super::super::frame::{CloneInfo, ForwardedEnv, Frame, Header, PendingQuestion};
use super::super::store::CloneRecord;
use super::super::zone::{Zone, Zones, relay};
use super::super::{DaemonError, store};
use super::Daemon;
use crate::sys::sync::lock;

/// How long a list or an answer waits for the zones (asked at once).
const ZONE_ANSWER: Duration = Duration::from_secs(20);

impl Daemon {
    /// The record of `name` when it is a clone in a zone.
    pub(super) fn zoned(&self, name: &str) -> Option<CloneRecord> {
        lock(&self.zoned).get(name).cloned()
    }

    /// `clone new --zone`: the zone's daemon makes the clone (with the forwarded variables,
    /// which only its memory keeps); this one records where it is.
    pub(super) async fn zone_clone_new(
        &self,
        record: CloneRecord,
        env: ForwardedEnv,
    ) -> Result<Header, DaemonError> {
        store::check_name(&record.name)?;
        let name = record.name.clone();
        if lock(&self.clones).contains_key(&name) || self.zoned(&name).is_some() {
            return Err(DaemonError::CloneExists { name });
        }
        let zone_name = record.zone.clone().unwrap_or_default();
        let zone = Zones::load(&self.paths.home)?.named(&zone_name)?;
        let answer = relay::request(
            &self.paths,
            &zone,
            Header::CloneNew {
                name: name.clone(),
                brain: record.brain.clone(),
                dir: record.dir.clone(),
                permission_mode: record.permission_mode.clone(),
                pass_env: record.pass_env.clone(),
                zone: None,
                env,
            },
        )
        .await?;
        let Header::Ok { message } = answer else {
            return Err(DaemonError::Remote(format!(
                "the zone {zone_name} answered the new clone unexpectedly"
            )));
        };
        self.store.save(&record)?;
        lock(&self.zoned).insert(name, record);
        Ok(Header::Ok {
            message: format!("{message}, in the zone {zone_name}"),
        })
    }

    /// Relays a request about a clone in a zone; a removal the zone confirmed (or of a clone
    /// whose zone is gone) also drops this daemon's record.
    pub(super) async fn relay_to_zone(
        &self,
        record: CloneRecord,
        request: Frame,
        conn: &mut Conn,
    ) -> Result<Option<Header>, DaemonError> {
        let zone_name = record.zone.clone().unwrap_or_default();
        let removing = matches!(request.header, Header::CloneRm { .. });
        let zone = match Zones::load(&self.paths.home)?.named(&zone_name) {
            Ok(zone) => zone,
            Err(_) if removing => {
                self.forget_zoned(&record.name)?;
                return Ok(Some(Header::Ok {
                    message: format!(
                        "removed the clone {} (its zone {zone_name} is no longer known, so nothing on that host was touched)",
                        record.name
                    ),
                }));
            }
            Err(e) => return Err(e),
        };
        let remote = relay::connect(&self.paths, &zone).await?;
        let last = relay::relay(&self.paths, remote, &zone, request, conn).await;
        if removing && matches!(last, Some(Header::Ok { .. })) {
            self.forget_zoned(&record.name)?;
        }
        Ok(None)
    }

    fn forget_zoned(&self, name: &str) -> Result<(), DaemonError> {
        lock(&self.zoned).remove(name);
        self.store.remove(name)
    }

    /// The records of the clones in zones, by zone.
    fn by_zone(&self) -> BTreeMap<String, Vec<CloneRecord>> {
        let mut by_zone: BTreeMap<String, Vec<CloneRecord>> = BTreeMap::new();
        for record in lock(&self.zoned).values() {
            by_zone
                .entry(record.zone.clone().unwrap_or_default())
                .or_default()
                .push(record.clone());
        }
        by_zone
    }

    /// One request to the daemon of `zone` and its answer (an `Error` frame for a refusal), or
    /// why there is none (within `ZONE_ANSWER`: an unreachable zone never holds up a list for
    /// long).
    async fn ask_zone(&self, zone: Result<Zone, String>, header: Header) -> Result<Header, String> {
        let zone = zone?;
        let asked = relay::request(&self.paths, &zone, header);
        match tokio::time::timeout(ZONE_ANSWER, asked).await {
            // The zone's daemon answered, if with a refusal.
            Ok(Err(DaemonError::Remote(message))) => Ok(Header::Error { message }),
            Ok(answer) => answer.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no answer within {} s", ZONE_ANSWER.as_secs())),
        }
    }

    /// `header` to the daemon of every zone this daemon relays clones to, all at once; each
    /// zone's clones here, and its answer or why there is none.
    async fn ask_zones(
        &self,
        header: Header,
    ) -> Vec<(String, Vec<CloneRecord>, Result<Header, String>)> {
        let by_zone = self.by_zone();
        let zones = Zones::load(&self.paths.home);
        let answers = futures::future::join_all(by_zone.keys().map(|name| {
            let zone = match &zones {
                Ok(zones) => zones.named(name).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            self.ask_zone(zone, header.clone())
        }))
        .await;
        by_zone
            .into_iter()
            .zip(answers)
            .map(|((zone, records), answer)| (zone, records, answer))
            .collect()
    }

    /// The questions waiting in the zones for the clones this daemon relays; a zone that
    /// cannot be reached shows none.
    pub(super) async fn zoned_pending(&self) -> Vec<PendingQuestion> {
        let asked = self
            .ask_zones(Header::AgentPending { here_only: true })
            .await;
        let mut out = Vec::new();
        for (_, records, answer) in asked {
            if let Ok(Header::Pending { questions }) = answer {
                out.extend(
                    questions
                        .into_iter()
                        .filter(|q| records.iter().any(|r| r.name == q.agent)),
                );
            }
        }
        out
    }

    /// Answers a question waiting in a zone: the zone's answer, or why no zone took it (the
    /// zones that could not be asked, by name).
    pub(super) async fn zoned_answer(
        &self,
        request_id: String,
        allow: bool,
        always: bool,
        message: Option<String>,
    ) -> Result<Header, String> {
        let answer = Header::AgentAnswer {
            request_id,
            allow,
            always,
            message,
            here_only: true,
        };
        let mut unasked = Vec::new();
        for (zone, _, answered) in self.ask_zones(answer).await {
            match answered {
                Ok(Header::Ok { message }) => {
                    return Ok(Header::Ok {
                        message: format!("{message}, in the zone {zone}"),
                    });
                }
                Ok(_) => {}
                Err(why) => unasked.push(format!("the zone {zone} could not be asked: {why}")),
            }
        }
        Err(unasked.join("; "))
    }

    /// The zones' clones as their daemons describe them, the zones asked at once; a zone that
    /// cannot be reached lists its clones with ssh's reason.
    pub(super) async fn zoned_infos(&self) -> Vec<CloneInfo> {
        let mut out = Vec::new();
        for (zone_name, records, answer) in self.ask_zones(Header::CloneList).await {
            let listed = match answer {
                Ok(Header::Clones { clones }) => Ok(clones),
                Ok(Header::Error { message }) => Err(message),
                Ok(_) => Err("the zone answered the list unexpectedly".to_string()),
                Err(e) => Err(e),
            };
            for record in records {
                let found = listed
                    .as_ref()
                    .ok()
                    .and_then(|clones| clones.iter().find(|c| c.name == record.name).cloned());
                out.push(match (found, &listed) {
                    (Some(info), _) => CloneInfo {
                        zone: Some(zone_name.clone()),
                        ..info
                    },
                    (None, listed) => CloneInfo {
                        name: record.name.clone(),
                        brain: record.brain.clone(),
                        mode: crate::brain::Mode::Dispatch,
                        pid: None,
                        series: None,
                        dir: record.dir.clone(),
                        busy: false,
                        zone: Some(zone_name.clone()),
                        unreachable: Some(match listed {
                            Err(reason) => reason.clone(),
                            Ok(_) => "the zone's daemon has no such clone".into(),
                        }),
                    },
                });
            }
        }
        out
    }
}
