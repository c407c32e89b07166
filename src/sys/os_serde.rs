//! Paths through serde as the operating system's bytes. serde's own `PathBuf` impl refuses a
//! path that is not UTF-8, and such paths are legal file names; an `OsStr` goes through as its
//! bytes.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serializer};

/// For `#[serde(with = "…::paths")]` on a `Vec<PathBuf>`.
pub(crate) mod paths {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(paths.iter().map(|p| p.as_os_str()))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
        Ok(Vec::<OsString>::deserialize(d)?
            .into_iter()
            .map(PathBuf::from)
            .collect())
    }
}

/// For `#[serde(with = "…::optional_paths")]` on an `Option<Vec<PathBuf>>`.
pub(crate) mod optional_paths {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        paths: &Option<Vec<PathBuf>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match paths {
            Some(paths) => {
                s.serialize_some(&paths.iter().map(|p| p.as_os_str()).collect::<Vec<_>>())
            }
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<PathBuf>>, D::Error> {
        Ok(Option::<Vec<OsString>>::deserialize(d)?
            .map(|paths| paths.into_iter().map(PathBuf::from).collect()))
    }
}

/// For `#[serde(with = "…::path")]` on a `PathBuf`.
pub(crate) mod path {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        path: &std::path::Path,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        serde::Serialize::serialize(path.as_os_str(), s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        Ok(PathBuf::from(OsString::deserialize(d)?))
    }
}

/// For `#[serde(with = "…::optional_path")]` on an `Option<PathBuf>`.
pub(crate) mod optional_path {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        path: &Option<PathBuf>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match path {
            Some(path) => s.serialize_some(path.as_os_str()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<PathBuf>, D::Error> {
        Ok(Option::<OsString>::deserialize(d)?.map(PathBuf::from))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Both {
        #[serde(with = "paths")]
        list: Vec<PathBuf>,
        #[serde(with = "optional_paths")]
        maybe: Option<Vec<PathBuf>>,
    }

    #[test]
    fn a_path_that_is_not_utf8_goes_through_whole() {
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/caf\xe9"));
        let both = Both {
            list: vec![odd.clone(), "/plain".into()],
            maybe: Some(vec![odd]),
        };
        let text = serde_json::to_string(&both).unwrap();
        assert_eq!(serde_json::from_str::<Both>(&text).unwrap(), both);
        let none = Both {
            list: vec![],
            maybe: None,
        };
        let text = serde_json::to_string(&none).unwrap();
        assert_eq!(serde_json::from_str::<Both>(&text).unwrap(), none);
    }
}
