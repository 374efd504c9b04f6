//! The wish facets whatever embedder ranks (issue 63): the bundled e5 reads what each activity
//! has ([`Wishes::has`], stored in its payload as `facets` at indexing) and what a query wants
//! ([`Wishes::desire`]); retrieval matches them field to field ([`Wishes::matched`]).
//!
//! Where the bundled e5 ranks, its vectors are read as they are: no second embedding. Beside an
//! API embedder (`WISH_FACETS=bundled`, the model at `EMBEDDING_MODEL_PATH`) the e5 embeds the
//! activity's views and the query itself, in process, accounted like any embedding. Either way
//! the facets are the same numbers, so they do not depend on the space ranking by meaning runs
//! in. A facet reading that fails leaves the activity or query without facets (ranked by
//! meaning alone), never a write or a search.

use crate::activities::embedder::{EmbeddingService, Input};
use crate::activities::index::Stored;
use crate::activities::ranking::normalised_sum;
use crate::activities::wish::Wishes;

/// Who reads the facets.
#[derive(Clone)]
enum Reader {
    /// No one: `WISH_FACETS=off`, `RAG_WISH_WEIGHT=0`, or no bundled e5 beside the API embedder.
    Off,
    /// The ranking embedder is the bundled e5: its vectors are read.
    Ranking,
    /// The bundled e5 beside an API embedder, through its own service, accounted to the agent.
    Own(EmbeddingService, &'static str),
}

/// The facet reader of a write path or a search.
#[derive(Clone)]
pub struct Facets {
    reader: Reader,
}

impl Facets {
    /// No facets.
    pub fn off() -> Self {
        Self { reader: Reader::Off }
    }

    /// Facets for the embedder of `ranking`: its own vectors when it is the bundled e5 (the
    /// model [`Wishes::shipped`] reads), else `bundled` (an e5 service, and the agent its calls
    /// are accounted to) when given, else none.
    pub fn new(ranking: &EmbeddingService, bundled: Option<(EmbeddingService, &'static str)>) -> Self {
        let reader = if ranking.vector_name().as_deref() == Some(Wishes::shipped().vector.as_str()) {
            Reader::Ranking
        } else {
            bundled.map_or(Reader::Off, |(e5, agent)| Reader::Own(e5, agent))
        };
        Self { reader }
    }

    /// Whether any facets are read (`/health`, the config check and the quality command say it).
    pub fn describe(&self) -> &'static str {
        match self.reader {
            Reader::Off => "off",
            Reader::Ranking => "read from the ranking embedder's vectors (bundled e5)",
            Reader::Own(..) => "read by the bundled e5 beside the API embedder",
        }
    }

    /// What each activity has, from its `views` ([`crate::activities::activity::Activity::dense_views`])
    /// and its `dense` vector where one was made: one entry per activity, `None` where unread.
    pub async fn of_activities(
        &self,
        views: &[[String; 2]],
        dense: &[Option<Vec<f32>>],
        request_id: &str,
    ) -> Vec<Option<Vec<f32>>> {
        let wishes = Wishes::shipped();
        match &self.reader {
            Reader::Off => vec![None; views.len()],
            Reader::Ranking => dense.iter().map(|d| d.as_deref().and_then(|v| wishes.has(v))).collect(),
            Reader::Own(e5, agent) => {
                let texts: Vec<String> = views.iter().flatten().cloned().collect();
                match e5.vectors(agent, request_id, &texts, Input::Query).await {
                    Ok(vectors) => vectors.chunks(2).map(|pair| wishes.has(&normalised_sum(pair))).collect(),
                    Err(reason) => {
                        tracing::warn!(%reason, activities = views.len(), "activity facets unread");
                        vec![None; views.len()]
                    }
                }
            }
        }
    }

    /// What the activity `point` has: its stored facets; where the bundled e5 ranks and it was
    /// indexed before they were stored, read from its dense vector (the same numbers).
    pub fn of_point(&self, point: &Stored) -> Option<Vec<f32>> {
        stored(&point.payload).or_else(|| match self.reader {
            Reader::Ranking => point.dense.as_deref().and_then(|d| Wishes::shipped().has(d)),
            _ => None,
        })
    }

    /// A query's vector by `ranking` (the ranking embedder embedding `text`) and what the query
    /// wants: read from that vector where the bundled e5 ranks; beside an API embedder, by the
    /// bundled e5 while the API answers (so a wish waits for the slower of the two, not both);
    /// `None` when unread.
    pub async fn with_desire<F>(&self, text: &str, request_id: &str, ranking: F) -> (F::Output, Option<Vec<f32>>)
    where
        F: Future<Output = Result<Vec<f32>, String>>,
    {
        let wishes = Wishes::shipped();
        match &self.reader {
            Reader::Off => (ranking.await, None),
            Reader::Ranking => {
                let vector = ranking.await;
                let desire = vector.as_ref().ok().map(|v| wishes.desire(v));
                (vector, desire)
            }
            Reader::Own(e5, agent) => {
                let own = async {
                    match e5.vectors(agent, request_id, &[text.to_owned()], Input::Query).await {
                        Ok(mut v) => v.pop().map(|q| wishes.desire(&q)),
                        Err(reason) => {
                            tracing::warn!(%reason, "query facets unread; ranked by meaning alone");
                            None
                        }
                    }
                };
                tokio::join!(ranking, own)
            }
        }
    }
}

/// An activity's stored facets (`facets` in its payload), when there are [`crate::activities::wish::FACETS`]
/// numbers.
pub fn stored(payload: &serde_json::Map<String, serde_json::Value>) -> Option<Vec<f32>> {
    let values = payload.get(crate::activities::index::FACETS)?.as_array()?;
    let facets: Vec<f32> = values.iter().map(|v| v.as_f64().map(|x| x as f32)).collect::<Option<_>>()?;
    (facets.len() == crate::activities::wish::FACETS.len()).then_some(facets)
}
