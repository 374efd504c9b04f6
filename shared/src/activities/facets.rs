//! The wish facets whatever embedder ranks (issue 63): the bundled e5 reads what each activity
//! has ([`Wishes::has`]) and what a query wants ([`Wishes::desire`]); retrieval matches them
//! field to field ([`Wishes::matched`]; [`Wish::met_by`]).
//!
//! Where the bundled e5 ranks, both are read from its own vectors (an activity's from its stored
//! dense vector, at search time): no second embedding, nothing more stored. Beside an API
//! embedder (`WISH_FACETS=bundled`, the model at `EMBEDDING_MODEL_PATH`) the e5 embeds each
//! activity's views at indexing, and its facets are stored in the payload (`facets`: the
//! model's [`Wishes::shipped_id`] and the numbers, so a refitted model never reads another's); it
//! embeds a query while the API does, and the reading is dropped (its work stopped) when the
//! query turns out not to be a wish. Either way the facets are the same numbers, so they do not
//! depend on the space ranking by meaning runs in. A reading that fails leaves the query
//! without facets (ranked by meaning alone) and the activity `embedding: "pending"` (the
//! backfill reads it again); never a failed write or search.

use serde_json::{Map, Value, json};

use crate::activities::embedder::{EmbeddingService, Input};
use crate::activities::index::{FACETS_FIELD, Stored};
use crate::activities::ranking::normalised_sum;
use crate::activities::wish::Wishes;

/// Who reads the facets.
#[derive(Clone)]
enum Reader {
    /// No one: `WISH_FACETS=off` beside an API embedder, or `RAG_WISH_WEIGHT=0`.
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

/// What a query wants, read or being read; dropped unread, its reading stops.
pub struct Desire(Option<tokio::task::JoinHandle<Option<Vec<f32>>>>, Option<Vec<f32>>);

impl Desire {
    /// The desire, once read (`None`: unread).
    pub async fn get(mut self) -> Option<Vec<f32>> {
        // Awaited in place: should the search's time box drop this, the reading stops too.
        match self.0.as_mut() {
            Some(reading) => reading.await.ok().flatten(),
            None => self.1.take(),
        }
    }
}

impl Drop for Desire {
    fn drop(&mut self) {
        if let Some(reading) = self.0.take() {
            reading.abort();
        }
    }
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

    /// The same reader with its own embedding time box at least `timeout` (the backfill's).
    pub fn lasting_at_least(mut self, timeout: std::time::Duration) -> Self {
        if let Reader::Own(e5, _) = &mut self.reader {
            *e5 = e5.clone().lasting_at_least(timeout);
        }
        self
    }

    /// Who reads the facets, in words (the quality command prints it).
    pub fn describe(&self) -> &'static str {
        match self.reader {
            Reader::Off => "off",
            Reader::Ranking => "read from the ranking embedder's vectors (bundled e5)",
            Reader::Own(..) => "read by the bundled e5 beside the API embedder",
        }
    }

    /// The payload field to store for each activity of `views`
    /// ([`crate::activities::activity::Activity::dense_views`]): `Some(None)` when nothing is
    /// stored (no reader beside an API embedder, or the bundled e5 ranks and its vector is
    /// read at search time); `Some(Some(facets))` when read; `None` when the reading failed (the
    /// activity stays pending). One entry per activity.
    pub async fn to_store(&self, views: &[[String; 2]], request_id: &str) -> Vec<Option<Option<Value>>> {
        let Reader::Own(e5, agent) = &self.reader else { return vec![Some(None); views.len()] };
        let texts: Vec<String> = views.iter().flatten().cloned().collect();
        let wishes = Wishes::shipped();
        match e5.vectors(agent, request_id, &texts, Input::Query).await {
            Ok(vectors) => vectors
                .chunks(2)
                .map(|pair| {
                    Some(
                        wishes.has(&normalised_sum(pair)).map(|has| json!({"model": Wishes::shipped_id(), "has": has})),
                    )
                })
                .collect(),
            Err(reason) => {
                tracing::warn!(%reason, activities = views.len(), "activity facets unread: left pending");
                vec![None; views.len()]
            }
        }
    }

    /// Whether facets are stored with each activity (beside an API embedder).
    pub fn stores(&self) -> bool {
        matches!(self.reader, Reader::Own(..))
    }

    /// What a query with `desire` wants of each candidate, made once per search.
    pub fn wish(&self, desire: Vec<f32>) -> Wish {
        let direction = matches!(self.reader, Reader::Ranking).then(|| Wishes::shipped().direction(&desire));
        Wish { desire, direction }
    }

    /// A query's vector by `ranking` (the ranking embedder embedding `text`) and what the query
    /// wants, if `wanted` (it may be ranked by meaning): read from that vector where the bundled
    /// e5 ranks; beside an API embedder, by the bundled e5 while the API answers (a wish waits
    /// for the slower of the two, not both; an unused reading is stopped when dropped).
    pub async fn with_desire<F>(&self, text: &str, request_id: &str, wanted: bool, ranking: F) -> (F::Output, Desire)
    where
        F: Future<Output = Result<Vec<f32>, String>>,
    {
        let wishes = Wishes::shipped();
        match &self.reader {
            Reader::Own(e5, agent) if wanted => {
                let (e5, agent, texts, id) = (e5.clone(), *agent, [text.to_owned()], request_id.to_owned());
                let reading = crate::core::background::spawn(async move {
                    match e5.vectors(agent, &id, &texts, Input::Query).await {
                        Ok(mut v) => v.pop().map(|q| Wishes::shipped().desire(&q)),
                        Err(reason) => {
                            tracing::warn!(%reason, "query facets unread; ranked by meaning alone");
                            None
                        }
                    }
                });
                let desire = Desire(reading, None);
                (ranking.await, desire)
            }
            Reader::Ranking if wanted => {
                let vector = ranking.await;
                let desire = vector.as_ref().ok().map(|v| wishes.desire(v));
                (vector, Desire(None, desire))
            }
            _ => (ranking.await, Desire(None, None)),
        }
    }
}

/// What a query wants of each candidate.
pub struct Wish {
    desire: Vec<f32>,
    /// Where the bundled e5 ranks: the desire's direction ([`Wishes::direction`]).
    direction: Option<Vec<f32>>,
}

impl Wish {
    /// How well the activity `point` meets the wish ([`Wishes::matched`]): where the bundled e5
    /// ranks, one product of the direction with its dense vector (unit length: no facets
    /// stored); else from its stored facets. `None`: nothing to read.
    pub fn met_by(&self, point: &Stored) -> Option<f32> {
        match &self.direction {
            Some(direction) => {
                let dense = point.dense.as_deref()?;
                let norm = dense.iter().map(|x| x * x).sum::<f32>().sqrt();
                (norm > 0.0).then(|| direction.iter().zip(dense).map(|(a, b)| a * b).sum::<f32>() / norm)
            }
            None => stored(&point.payload).map(|has| Wishes::matched(&self.desire, &has)),
        }
    }
}

/// An activity's stored facets (`facets` in its payload), when the shipped model made them.
pub fn stored(payload: &Map<String, Value>) -> Option<Vec<f32>> {
    let field = payload.get(FACETS_FIELD)?;
    if field.get("model")?.as_str()? != Wishes::shipped_id() {
        return None;
    }
    let values = field.get("has")?.as_array()?;
    let facets: Vec<f32> = values.iter().map(|v| v.as_f64().map(|x| x as f32)).collect::<Option<_>>()?;
    (facets.len() == crate::activities::wish::FACETS.len()).then_some(facets)
}
