//! The configuration loader: [`Env`] reads every environment variable the bundle reads, and
//! core's own settings. Each capability reads and validates its settings through it (its
//! `settings` module); [`crate::compose::Config`] holds them for a function. Defaults make a
//! fresh checkout run with no keys and no cloud (see README, `.env.example`).

use std::path::PathBuf;
use std::time::Duration;

use crate::core::error::{Error, Result};

/// The environment as the bundle reads it: values trimmed, an empty value unset. Every reader
/// names the variable in the error it returns (`Error::Config`, a JSON 500 `misconfigured`).
pub struct Env<'a> {
    lookup: Lookup<'a>,
}

/// Where [`Env`] finds a variable's raw value.
type Lookup<'a> = Box<dyn Fn(&str) -> Option<String> + 'a>;

impl Env<'static> {
    /// The process environment.
    pub fn process() -> Self {
        Self::from_lookup(|key| std::env::var(key).ok())
    }
}

impl<'a> Env<'a> {
    /// The variables `lookup` gives (a test passes a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String> + 'a) -> Self {
        Self { lookup: Box::new(lookup) }
    }

    /// The variables `pairs` name, nothing else (the settings' unit tests).
    #[cfg(test)]
    pub(crate) fn from_pairs(pairs: &'a [(&'a str, &'a str)]) -> Self {
        Self::from_lookup(|k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()))
    }

    /// `key`'s value, trimmed; `None` when unset or empty.
    pub fn get(&self, key: &str) -> Option<String> {
        (self.lookup)(key).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    /// An upstream's base URL, without a trailing slash.
    pub fn base_url(&self, key: &str, default: &str) -> String {
        self.get(key).unwrap_or_else(|| default.into()).trim_end_matches('/').to_owned()
    }

    /// A whole number.
    pub fn number(&self, key: &str, default: u64) -> Result<u64> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| Error::Config(format!("{key} must be a whole number, not {v:?}"))),
        }
    }

    /// A duration given in milliseconds.
    pub fn millis(&self, key: &str, default: u64) -> Result<Duration> {
        self.number(key, default).map(Duration::from_millis)
    }

    /// A duration given in seconds.
    pub fn secs(&self, key: &str, default: u64) -> Result<Duration> {
        self.number(key, default).map(Duration::from_secs)
    }

    /// An amount of USD, zero or more.
    pub fn usd(&self, key: &str, default: f64) -> Result<f64> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|u| u.is_finite() && *u >= 0.0)
                .ok_or_else(|| Error::Config(format!("{key} must be an amount of USD, not {v:?}"))),
        }
    }

    /// One of `options` by its name (`default` when unset).
    pub fn choice<T: Copy>(&self, key: &str, default: &str, options: &[(&str, T)]) -> Result<T> {
        let value = self.get(key).unwrap_or_else(|| default.into());
        options.iter().find(|(name, _)| *name == value).map(|(_, v)| *v).ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            let (last, rest) = names.split_last().unwrap_or((&"", &[]));
            let listed = if rest.is_empty() { (*last).to_owned() } else { format!("{} or {last}", rest.join(", ")) };
            Error::Config(format!("{key} must be {listed}, not {value:?}"))
        })
    }

    /// Agent names (comma or space separated), each checked.
    pub fn agents(&self, key: &str, default: &str) -> Result<Vec<String>> {
        self.get(key)
            .unwrap_or_else(|| default.into())
            .split([',', ' '])
            .filter(|a| !a.is_empty())
            .map(|a| {
                crate::core::validate::agent_name(Some(a), "").map_err(|_| {
                    Error::Config(format!("{key}: {a:?} is not an agent name (1-64 of a-z, 0-9, '-', '_')"))
                })
            })
            .collect()
    }
}

/// Which record store adapter to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordStoreKind {
    /// Embedded SQLite file under `DATA_DIR`.
    Local,
    /// DynamoDB table `TABLE_NAME` (endpoint overridable by `AWS_ENDPOINT_URL_DYNAMODB`).
    DynamoDb { table: String },
}

/// Core's settings: where records live, and what every upstream call shares.
#[derive(Debug, Clone)]
pub struct Settings {
    pub record_store: RecordStoreKind,
    pub data_dir: PathBuf,
    /// How long any one record-store operation may take, retries included
    /// (`STORE_TIMEOUT_MS`, 1000); past it the caller's fallback runs.
    pub store_timeout: Duration,
    /// The first wait before an upstream call is retried (`RETRY_BASE_MS`), then doubled.
    pub retry_base: Duration,
    /// Time box of one request to an upstream API (`UPSTREAM_TIMEOUT_MS`).
    pub upstream_timeout: Duration,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        Ok(Self {
            record_store: match env.get("RECORD_STORE").as_deref().unwrap_or("local") {
                "local" => RecordStoreKind::Local,
                "dynamodb" => RecordStoreKind::DynamoDb {
                    table: env
                        .get("TABLE_NAME")
                        .ok_or_else(|| Error::Config("RECORD_STORE=dynamodb needs TABLE_NAME".into()))?,
                },
                other => {
                    return Err(Error::Config(format!("RECORD_STORE must be local or dynamodb, not {other:?}")));
                }
            },
            data_dir: env.get("DATA_DIR").map_or_else(|| PathBuf::from("./.data"), PathBuf::from),
            store_timeout: env.millis("STORE_TIMEOUT_MS", 1000)?.max(Duration::from_millis(10)),
            retry_base: env.millis("RETRY_BASE_MS", 1000)?,
            upstream_timeout: env.millis("UPSTREAM_TIMEOUT_MS", 30_000)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_are_unset_and_bad_ones_are_named() {
        let e = Env::from_pairs(&[("A", "  "), ("N", "an hour"), ("U", "-1"), ("C", "maybe")]);
        assert_eq!((e.get("A"), e.number("A", 7).unwrap()), (None, 7));
        assert!(e.number("N", 1).unwrap_err().to_string().contains('N'));
        assert!(e.usd("U", 0.0).unwrap_err().to_string().contains("U must be an amount of USD"));
        let err = e.choice("C", "yes", &[("yes", true), ("no", false)]).unwrap_err().to_string();
        assert!(err.contains("C must be yes or no, not \"maybe\""), "{err}");
        assert!(e.choice("unset", "no", &[("yes", true), ("no", false)]).is_ok_and(|v| !v));
    }

    #[test]
    fn core_defaults_are_the_embedded_store() {
        let s = Settings::read(&Env::from_pairs(&[])).unwrap();
        assert_eq!(s.record_store, RecordStoreKind::Local);
        assert_eq!(s.data_dir, PathBuf::from("./.data"));
        assert_eq!((s.retry_base, s.upstream_timeout), (Duration::from_secs(1), Duration::from_secs(30)));
        let e = Settings::read(&Env::from_pairs(&[("RECORD_STORE", "dynamodb")])).unwrap_err();
        assert!(e.to_string().contains("TABLE_NAME"));
    }
}
