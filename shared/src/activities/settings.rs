//! Activity recommendations' settings: the embedder, the vector index, how retrieval ranks
//! and explains, the backfill's pace, and the zone activities' times are said in.

use std::path::PathBuf;
use std::time::Duration;

use crate::core::config::Env;
use crate::core::error::{Error, Result};
use crate::core::secrets::Secret;
use crate::llm::settings::model;

/// Weight of the lexical list when it is fused, against 1 for the dense list: routed fusion
/// fuses only queries specific to it, so both channels count alike (`cargo xtask quality`).
pub const DEFAULT_LEXICAL_WEIGHT: f32 = 1.0;

/// Which embedder adapter to build (`EMBEDDING_PROVIDER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderKind {
    /// multilingual-e5-small in process (`embedder::e5`).
    Local,
    /// An OpenAI-compatible `/embeddings` API (`EMBEDDING_API_KEY`, `EMBEDDING_BASE_URL`).
    OpenAi,
}

/// Which vector index adapter to build (`VECTOR_STORE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorStoreKind {
    /// Qdrant Edge in process, under `DATA_DIR/qdrant` (the `edge` feature: deploy builds, which
    /// use a server, leave it out).
    #[cfg(feature = "edge")]
    Edge,
    /// A Qdrant server over gRPC.
    /// `read_only` (`QDRANT_READ_ONLY=true`): the function only reads, with a read-only key; it
    /// never creates the collection or its payload indexes.
    Qdrant { url: String, api_key: Option<Secret>, read_only: bool },
}

/// How processes share the Qdrant Edge directory (`EDGE_SHARING`; see `index::edge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeSharing {
    /// Open per operation under a file lock: several processes may use the directory.
    Shared,
    /// Open once and keep it: this process owns the directory.
    Exclusive,
}

/// How retrieval combines dense and lexical hits (`RAG_FUSION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Per query ([`crate::activities::ranking::routed`]): both channels by reciprocal rank
    /// when the query is specific to the lexical one (a name, a place, a rare term), else the
    /// dense hits first and lexical-only hits after them.
    Routed,
    /// Reciprocal rank fusion of both channels for every query.
    Rrf,
    /// Dense hits by similarity alone.
    Dense,
}

/// How results of a semantic search get their `matchReason` (`RAG_MATCH_REASON`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchReason {
    /// The chat model writes them (one call per request), template as fallback.
    Llm,
    /// Written from what matched, time and distance, without a model.
    Template,
    /// No `matchReason`.
    Off,
}

/// The Qdrant server's URL: `https`, or `http` only on a loopback host (a local server), so
/// the API key never crosses a network in clear (issue 53).
fn qdrant_url(url: Option<String>) -> Result<String> {
    let url = url.ok_or_else(|| Error::Config("VECTOR_STORE=qdrant needs QDRANT_URL".into()))?;
    let parsed = url::Url::parse(&url).map_err(|e| Error::Config(format!("QDRANT_URL is not a URL ({e})")))?;
    match parsed.scheme() {
        "https" => Ok(url),
        "http" if crate::core::validate::loopback(&parsed) => Ok(url),
        _ => Err(Error::Config(
            "QDRANT_URL must be https (http only on localhost): its API key would cross the network in clear".into(),
        )),
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// Zone in which an activity's 周几 / 早上…深夜 are said (`ACTIVITY_TIMEZONE`).
    pub timezone: chrono_tz::Tz,
    /// Which embedder (`EMBEDDING_PROVIDER`): `local` (the bundled e5, default without a key) or
    /// `openai` (default with `EMBEDDING_API_KEY`).
    pub embedder: EmbedderKind,
    /// The bundled model's file (`EMBEDDING_MODEL_PATH`; default: where
    /// `infra/fetch-model.sh` puts it).
    pub embedding_model_path: PathBuf,
    /// The OpenAI-compatible embedding API; no key -> no embedder (lexical retrieval).
    pub embedding_api_key: Option<Secret>,
    pub embedding_base_url: String,
    pub embedding_provider: String,
    pub embedding_model: String,
    pub embedding_dimensions: usize,
    /// How many of an activity's views an API model's vector is made of (`EMBEDDING_VIEWS`, 1
    /// or 2; [`crate::activities::embedder::Embedder::views`]): 1 unless measured better.
    pub embedding_views: usize,
    /// Whether the bundled e5 reads the wish facets beside an API embedder (`WISH_FACETS`:
    /// `bundled`, or `off`, the default; [`crate::activities::facets`]). Where e5 ranks it
    /// reads them from its own vectors either way.
    pub wish_facets: bool,
    /// Where activity points live (`VECTOR_STORE`).
    pub vector_store: VectorStoreKind,
    pub edge_sharing: EdgeSharing,
    /// The collection (`QDRANT_COLLECTION`), also the Edge shard's directory name.
    pub qdrant_collection: String,
    /// Time box of one request to the Qdrant server (`QDRANT_TIMEOUT_MS`).
    pub qdrant_timeout: Duration,
    /// Dense hits below this cosine are dropped (`RAG_MIN_SIMILARITY`; default: the
    /// embedder's own floor).
    pub min_similarity: Option<f32>,
    /// `routed` (per query), `rrf` (dense + lexical) or `dense` (`RAG_FUSION`).
    pub fusion: Fusion,
    /// Weight of the lexical list against the dense list's 1 where fused (`RAG_LEXICAL_WEIGHT`).
    pub lexical_weight: f32,
    /// How far a wish's facets move its query vector (`RAG_WISH_WEIGHT`, 0 to 2; 0 = off;
    /// [`crate::activities::wish`]).
    pub wish_weight: f32,
    /// How nearness, soonness, variety and dislikes move the ranking (`RAG_NEAR_WEIGHT`,
    /// `RAG_NEAR_SCALE_KM`, `RAG_SOON_WEIGHT`, `RAG_SOON_SCALE_HOURS`, `RAG_DIVERSITY`,
    /// `RAG_DISLIKE_WEIGHT`; [`crate::activities::ranking::Shaping`]).
    pub shaping: crate::activities::ranking::Shaping,
    /// Time box of a search's query embedding (`RAG_EMBED_TIMEOUT_MS`).
    pub search_embed_timeout: Duration,
    pub match_reason: MatchReason,
    /// Time box of the model's match reasons (`RAG_REASON_TIMEOUT_MS`), within the 3 s budget.
    pub reason_timeout: Duration,
    /// Chat model for match reasons (`LLM_RAG_MODEL`, else `LLM_MODEL`).
    pub reason_model: String,
    /// Embedder calls per minute of the backfill job (`BACKFILL_RATE`).
    pub backfill_rate: u32,
    /// Time box of an index write's embedding (`INDEX_EMBED_TIMEOUT_MS`); past it, points are
    /// written pending.
    pub index_embed_timeout: Duration,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        let bounded = |key: &str, range: std::ops::RangeInclusive<f32>, what: &str| -> Result<Option<f32>> {
            match env.get(key) {
                None => Ok(None),
                Some(v) => v
                    .parse::<f32>()
                    .ok()
                    .filter(|x| range.contains(x))
                    .map(Some)
                    .ok_or_else(|| Error::Config(format!("{key} must be {what}, not {v:?}"))),
            }
        };
        Ok(Self {
            timezone: match env.get("ACTIVITY_TIMEZONE") {
                None => chrono_tz::Asia::Shanghai,
                Some(zone) => zone.parse().map_err(|_| {
                    Error::Config(format!("ACTIVITY_TIMEZONE {zone:?} is not an IANA zone such as Asia/Shanghai"))
                })?,
            },
            embedder: {
                let keyed = if env.secret("EMBEDDING_API_KEY")?.is_some() { "openai" } else { "local" };
                env.choice(
                    "EMBEDDING_PROVIDER",
                    keyed,
                    &[("local", EmbedderKind::Local), ("openai", EmbedderKind::OpenAi)],
                )?
            },
            embedding_model_path: env.get("EMBEDDING_MODEL_PATH").map_or_else(
                || {
                    env.get("RESEARCH_BUNDLE_CACHE")
                        .map(PathBuf::from)
                        .or_else(|| env.get("HOME").map(|h| PathBuf::from(h).join(".cache/research-bundle")))
                        .unwrap_or_else(|| PathBuf::from(".cache/research-bundle"))
                        .join("models/e5-small-q4.bin")
                },
                PathBuf::from,
            ),
            embedding_api_key: env.secret("EMBEDDING_API_KEY")?,
            embedding_base_url: env.base_url("EMBEDDING_BASE_URL", "https://open.bigmodel.cn/api/paas/v4"),
            embedding_provider: env.get("EMBEDDING_PROVIDER_NAME").unwrap_or_else(|| "zhipu".into()),
            embedding_model: env.get("EMBEDDING_MODEL").unwrap_or_else(|| "embedding-3".into()),
            embedding_dimensions: usize::try_from(env.number("EMBEDDING_DIMENSIONS", 1024)?).unwrap_or(1024).max(1),
            embedding_views: env.choice("EMBEDDING_VIEWS", "1", &[("1", 1), ("2", 2)])?,
            wish_facets: env.choice("WISH_FACETS", "off", &[("bundled", true), ("off", false)])?,
            vector_store: match env.get("VECTOR_STORE").as_deref().unwrap_or("edge") {
                #[cfg(feature = "edge")]
                "edge" => VectorStoreKind::Edge,
                #[cfg(not(feature = "edge"))]
                "edge" => {
                    return Err(Error::Config(
                        "VECTOR_STORE is edge (the default), but this build has no Qdrant Edge: deploy builds \
                         (`cargo lambda build`) leave it out; set VECTOR_STORE=qdrant and QDRANT_URL"
                            .into(),
                    ));
                }
                "qdrant" => VectorStoreKind::Qdrant {
                    url: qdrant_url(env.get("QDRANT_URL"))?,
                    api_key: env.secret("QDRANT_API_KEY")?,
                    read_only: env.choice("QDRANT_READ_ONLY", "false", &[("true", true), ("false", false)])?,
                },
                other => return Err(Error::Config(format!("VECTOR_STORE must be edge or qdrant, not {other:?}"))),
            },
            edge_sharing: env.choice(
                "EDGE_SHARING",
                "shared",
                &[("shared", EdgeSharing::Shared), ("exclusive", EdgeSharing::Exclusive)],
            )?,
            qdrant_collection: {
                let name = env.get("QDRANT_COLLECTION").unwrap_or_else(|| "activities".into());
                if !crate::core::validate::is_id(&name, 64) {
                    return Err(Error::Config(format!(
                        "QDRANT_COLLECTION must be 1-64 letters, digits, '-' or '_', not {name:?}"
                    )));
                }
                name
            },
            qdrant_timeout: env.millis("QDRANT_TIMEOUT_MS", 1_000)?.max(Duration::from_millis(1)),
            min_similarity: bounded("RAG_MIN_SIMILARITY", -1.0..=1.0, "a cosine from -1 to 1")?,
            fusion: env.choice(
                "RAG_FUSION",
                "routed",
                &[("routed", Fusion::Routed), ("rrf", Fusion::Rrf), ("dense", Fusion::Dense)],
            )?,
            lexical_weight: bounded("RAG_LEXICAL_WEIGHT", 0.0..=10.0, "a number from 0 to 10")?
                .unwrap_or(DEFAULT_LEXICAL_WEIGHT),
            wish_weight: bounded("RAG_WISH_WEIGHT", 0.0..=2.0, "a number from 0 to 2")?
                .unwrap_or(crate::activities::wish::DEFAULT_WEIGHT),
            shaping: {
                let d = crate::activities::ranking::Shaping::DEFAULT;
                let or = |v: Option<f32>, default: f32| v.unwrap_or(default);
                crate::activities::ranking::Shaping {
                    near_weight: or(bounded("RAG_NEAR_WEIGHT", 0.0..=2.0, "a number from 0 to 2")?, d.near_weight),
                    near_scale_km: bounded("RAG_NEAR_SCALE_KM", 0.1..=100.0, "a distance from 0.1 to 100 km")?
                        .map_or(d.near_scale_km, f64::from),
                    soon_weight: or(bounded("RAG_SOON_WEIGHT", 0.0..=2.0, "a number from 0 to 2")?, d.soon_weight),
                    soon_scale_hours: bounded(
                        "RAG_SOON_SCALE_HOURS",
                        1.0..=2160.0,
                        "a number of hours from 1 to 2160",
                    )?
                    .map_or(d.soon_scale_hours, f64::from),
                    diversity: or(bounded("RAG_DIVERSITY", 0.0..=0.9, "a number from 0 to 0.9")?, d.diversity),
                    dislike_weight: or(
                        bounded("RAG_DISLIKE_WEIGHT", 0.0..=1.0, "a number from 0 to 1")?,
                        d.dislike_weight,
                    ),
                }
            },
            search_embed_timeout: env.millis("RAG_EMBED_TIMEOUT_MS", 1500)?,
            // A model writes the reasons when one is configured (seed 004 R5.3), else the template.
            match_reason: {
                let modelled = if env.secret("LLM_API_KEY")?.is_some() { "llm" } else { "template" };
                env.choice(
                    "RAG_MATCH_REASON",
                    modelled,
                    &[("llm", MatchReason::Llm), ("template", MatchReason::Template), ("off", MatchReason::Off)],
                )?
            },
            reason_timeout: env.millis("RAG_REASON_TIMEOUT_MS", 1000)?,
            reason_model: model("LLM_RAG_MODEL", env),
            backfill_rate: u32::try_from(env.number("BACKFILL_RATE", 60)?).unwrap_or(u32::MAX).max(1),
            index_embed_timeout: env.millis("INDEX_EMBED_TIMEOUT_MS", 20_000)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings> {
        Settings::read(&Env::from_pairs(pairs))
    }

    #[test]
    fn a_model_writes_match_reasons_when_one_is_configured() {
        assert_eq!(settings(&[]).unwrap().match_reason, MatchReason::Template);
        assert_eq!(settings(&[("LLM_API_KEY", "k")]).unwrap().match_reason, MatchReason::Llm);
        let chosen = settings(&[("LLM_API_KEY", "k"), ("RAG_MATCH_REASON", "template")]).unwrap();
        assert_eq!(chosen.match_reason, MatchReason::Template, "an explicit choice wins");
        assert_eq!(
            settings(&[("RAG_MATCH_REASON", " ")]).unwrap().match_reason,
            MatchReason::Template,
            "empty is unset"
        );
        assert!(settings(&[("RAG_MATCH_REASON", "gpt")]).is_err());
    }

    #[test]
    fn the_embedder_is_local_without_a_key_and_openai_with_one() {
        let s = settings(&[("HOME", "/home/u")]).unwrap();
        assert_eq!(s.embedder, EmbedderKind::Local);
        assert_eq!(s.embedding_model_path, PathBuf::from("/home/u/.cache/research-bundle/models/e5-small-q4.bin"));
        assert_eq!(s.min_similarity, None);
        assert_eq!(settings(&[("EMBEDDING_API_KEY", "k")]).unwrap().embedder, EmbedderKind::OpenAi);
        let s = settings(&[("EMBEDDING_API_KEY", "k"), ("EMBEDDING_PROVIDER", "local")]).unwrap();
        assert_eq!(s.embedder, EmbedderKind::Local);
        assert_eq!(settings(&[("EMBEDDING_PROVIDER", "openai")]).unwrap().embedder, EmbedderKind::OpenAi);
        let e = settings(&[("EMBEDDING_PROVIDER", "bert")]).unwrap_err();
        assert!(e.to_string().contains("EMBEDDING_PROVIDER"));
        let s = settings(&[("EMBEDDING_MODEL_PATH", "/opt/models/e5.bin"), ("RAG_MIN_SIMILARITY", "0.7")]).unwrap();
        assert_eq!((s.embedding_model_path, s.min_similarity), (PathBuf::from("/opt/models/e5.bin"), Some(0.7)));
    }

    #[test]
    fn bad_values_are_named() {
        let e = settings(&[("ACTIVITY_TIMEZONE", "Mars/Olympus")]).unwrap_err();
        assert!(e.to_string().contains("ACTIVITY_TIMEZONE"));
        assert_eq!(settings(&[]).unwrap().timezone, chrono_tz::Asia::Shanghai);
        let qdrant = [("VECTOR_STORE", "qdrant"), ("QDRANT_URL", "http://127.0.0.1:6334")];
        for (named, pairs) in [
            ("RAG_LEXICAL_WEIGHT", vec![("RAG_LEXICAL_WEIGHT", "11")]),
            ("RAG_WISH_WEIGHT", vec![("RAG_WISH_WEIGHT", "-0.1")]),
            ("RAG_NEAR_SCALE_KM", vec![("RAG_NEAR_SCALE_KM", "0")]),
            ("RAG_SOON_WEIGHT", vec![("RAG_SOON_WEIGHT", "3")]),
            ("RAG_DIVERSITY", vec![("RAG_DIVERSITY", "1.5")]),
            ("RAG_DISLIKE_WEIGHT", vec![("RAG_DISLIKE_WEIGHT", "x")]),
            ("QDRANT_URL", vec![("VECTOR_STORE", "qdrant")]),
            ("QDRANT_READ_ONLY", [&qdrant[..], &[("QDRANT_READ_ONLY", "yes")]].concat()),
        ] {
            let e = settings(&pairs).unwrap_err().to_string();
            assert!(e.contains(named), "{named}: {e}");
        }
        assert!(settings(&[&qdrant[..], &[("QDRANT_READ_ONLY", "true")]].concat()).is_ok());
        // Issue 53: the key never crosses a network in clear.
        for url in ["http://qdrant.internal:6334", "http://10.0.0.5:6334", "ftp://127.0.0.1:6334", "qdrant:6334"] {
            let e = settings(&[("VECTOR_STORE", "qdrant"), ("QDRANT_URL", url)]).unwrap_err().to_string();
            assert!(e.contains("QDRANT_URL"), "{url}: {e}");
        }
        for url in ["https://xyz.cloud.qdrant.io:6334", "http://localhost:6334", "http://[::1]:6334"] {
            assert!(settings(&[("VECTOR_STORE", "qdrant"), ("QDRANT_URL", url)]).is_ok(), "{url}");
        }
    }
}
