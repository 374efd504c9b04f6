//! OpenAI-compatible embeddings (`POST {EMBEDDING_BASE_URL}/embeddings`): Zhipu `embedding-3`
//! at 1024 dimensions by default, batched `input`.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Embedder, Input};
use crate::core::secrets::Secret;
use crate::core::upstream::JsonClient;
use crate::core::upstream::{ProviderError, Usage};

pub struct OpenAiEmbedder {
    http: JsonClient,
    endpoint: String,
    key: Secret,
    provider: String,
    model: String,
    dimensions: usize,
    views: usize,
}

impl OpenAiEmbedder {
    pub fn new(
        base_url: &str,
        key: Secret,
        provider: &str,
        model: &str,
        dimensions: usize,
        timeout: Duration,
    ) -> Result<Self, ProviderError> {
        Ok(Self {
            http: JsonClient::new(timeout)?,
            endpoint: format!("{}/embeddings", base_url.trim_end_matches('/')),
            key,
            provider: provider.to_owned(),
            model: model.to_owned(),
            dimensions,
            views: 1,
        })
    }

    /// The same adapter making an activity's vector of `views` views (`EMBEDDING_VIEWS`).
    pub fn with_views(mut self, views: usize) -> Self {
        self.views = views.clamp(1, 2);
        self
    }
}

/// Reads `data[{index, embedding}]` (any order) into one vector per input, checking count and
/// dimension.
pub fn parse(bytes: &[u8], inputs: usize, dimensions: usize) -> Result<(Vec<Vec<f32>>, Usage), ProviderError> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| ProviderError::Malformed(format!("response is not JSON: {e}")))?;
    let data =
        v.get("data").and_then(Value::as_array).ok_or_else(|| ProviderError::Malformed("no data array".into()))?;
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; inputs];
    for (i, item) in data.iter().enumerate() {
        let index = item.get("index").and_then(Value::as_u64).map_or(i, |n| n as usize);
        let embedding: Vec<f32> = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| ProviderError::Malformed(format!("data[{i}] has no embedding")))?
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<_>>()
            .ok_or_else(|| ProviderError::Malformed(format!("data[{i}] has a non-number")))?;
        if embedding.len() != dimensions {
            return Err(ProviderError::Malformed(format!(
                "data[{i}] has {} dimensions, expected {dimensions}",
                embedding.len()
            )));
        }
        let slot =
            vectors.get_mut(index).ok_or_else(|| ProviderError::Malformed(format!("index {index} out of range")))?;
        *slot = Some(embedding);
    }
    let vectors = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| ProviderError::Malformed(format!("no embedding for input {i}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let usage = Usage {
        input_tokens: v
            .pointer("/usage/prompt_tokens")
            .or_else(|| v.pointer("/usage/total_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0),
        ..Usage::default()
    };
    Ok((vectors, usage))
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn views(&self) -> usize {
        self.views
    }

    /// Queries and passages are embedded alike (the API has no such distinction).
    async fn embed_batch(&self, inputs: &[String], _input: Input) -> Result<(Vec<Vec<f32>>, Usage), ProviderError> {
        let body = json!({"model": self.model, "input": inputs, "dimensions": self.dimensions});
        parse(&self.http.post(&self.endpoint, &self.key, &body).await?, inputs.len(), self.dimensions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_in_input_order_with_their_dimension_checked() {
        let body = json!({"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}], "usage": {"prompt_tokens": 12, "total_tokens": 12}});
        let (v, u) = parse(body.to_string().as_bytes(), 2, 2).unwrap();
        assert_eq!(v, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert_eq!(u.input_tokens, 12);
        assert!(
            matches!(parse(body.to_string().as_bytes(), 2, 3), Err(ProviderError::Malformed(m)) if m.contains("expected 3"))
        );
        assert!(
            matches!(parse(body.to_string().as_bytes(), 3, 2), Err(ProviderError::Malformed(m)) if m.contains("input 2"))
        );
    }
}
