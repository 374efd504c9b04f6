//! `cargo xtask quality --rotated`: the bundled e5 served as an OpenAI-compatible embeddings
//! API on 127.0.0.1 under a fixed random rotation of its vectors, and the quality sets measured
//! through the API path against it (issue 63).
//!
//! A rotation keeps every cosine, so ranking by meaning is the same as the bundled path's; heads
//! fitted in e5's space read nonsense from the rotated vectors. The wish facets are read by the
//! bundled e5 beside the API embedder (`shared::activities::facets`), so the configured
//! ranking must give the bundled path's figures: the proof that they do not depend on the
//! embedder's space.
//!
//! The server is as strict as OpenAI's `POST /v1/embeddings` (openai-python's
//! `EmbeddingCreateParams`: `input`, `model`, `dimensions`, `encoding_format`, `user`; any other
//! field refused with a 400), answers the `CreateEmbeddingResponse` shape (`object: "list"`,
//! `data[{object: "embedding", index, embedding}]`, `model`, `usage{prompt_tokens,
//! total_tokens}`) and wants a bearer token.

use std::path::Path;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};

/// The rotation's seed: fixed, so every run measures the same space.
const SEED: u64 = 0x5eed_0063;

/// What the API path is configured with against the server at `base_url`: the same floor and
/// views as the bundled e5 (properties of the model, which a rotation keeps).
pub fn env(base_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("EMBEDDING_PROVIDER", "openai".into()),
        ("EMBEDDING_API_KEY", "rotated-e5-test-key".into()),
        ("EMBEDDING_BASE_URL", base_url.into()),
        ("EMBEDDING_PROVIDER_NAME", "rotated".into()),
        ("EMBEDDING_MODEL", "e5-small-rotated".into()),
        ("EMBEDDING_DIMENSIONS", "384".into()),
        ("EMBEDDING_VIEWS", "2".into()),
        ("RAG_MIN_SIMILARITY", "0.8".into()),
        ("WISH_FACETS", "bundled".into()),
        (
            "PRICES",
            json!({"rotated/e5-small-rotated": {"input_per_1k_usd": 0, "output_per_1k_usd": 0,
                   "source": "the bundled e5 on 127.0.0.1: no fee", "as_of": "2026-11-29"}})
            .to_string(),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    input: Input,
    model: String,
    dimensions: Option<usize>,
    encoding_format: Option<String>,
    #[allow(dead_code)]
    user: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Input {
    One(String),
    Many(Vec<String>),
}

struct Rotated {
    model: e5::E5Model,
    rotation: Vec<Vec<f32>>,
}

/// Serves the model at `model` rotated on 127.0.0.1; returns the API root (`…/v1`).
pub async fn serve(model: &Path) -> crate::Result<String> {
    let model = e5::E5Model::load(model)?;
    let rotation = rotation(model.dimensions(), SEED);
    let app =
        axum::Router::new().route("/v1/embeddings", post(embeddings)).with_state(Arc::new(Rotated { model, rotation }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

async fn embeddings(
    State(state): State<Arc<Rotated>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> (StatusCode, Json<Value>) {
    let refuse = |status: StatusCode, message: String| {
        (status, Json(json!({"error": {"message": message, "type": "invalid_request_error"}})))
    };
    if !headers.get("authorization").and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("Bearer ")) {
        return refuse(StatusCode::UNAUTHORIZED, "no bearer token".into());
    }
    let request: Request = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("invalid request: {e}")),
    };
    let dims = state.model.dimensions();
    if request.dimensions.is_some_and(|d| d != dims) {
        return refuse(StatusCode::BAD_REQUEST, format!("this model has {dims} dimensions"));
    }
    if request.encoding_format.as_deref().is_some_and(|f| f != "float") {
        return refuse(StatusCode::BAD_REQUEST, "only encoding_format float".into());
    }
    let inputs = match request.input {
        Input::One(text) => vec![text],
        Input::Many(texts) => texts,
    };
    let state2 = Arc::clone(&state);
    let embedded = tokio::task::spawn_blocking(move || {
        let texts: Vec<&str> = inputs.iter().map(String::as_str).collect();
        // As the bundled adapter embeds an activity's views and a query: as queries.
        e5::embed_parallel(&state2.model, &texts, true, 2)
    })
    .await;
    let Ok((vectors, tokens)) = embedded else {
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, "the model failed".into());
    };
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let turned: Vec<f32> =
                state.rotation.iter().map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum()).collect();
            json!({"object": "embedding", "index": i, "embedding": turned})
        })
        .collect();
    (
        StatusCode::OK,
        Json(json!({"object": "list", "data": data, "model": request.model,
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})),
    )
}

/// A random orthogonal `n`×`n` matrix from `seed`: Gaussian rows (SplitMix64, Box-Muller),
/// made orthonormal by modified Gram-Schmidt (in f64).
pub fn rotation(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    let mut uniform = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut rows: Vec<Vec<f64>> = (0..n)
        .map(|_| {
            (0..n)
                .map(|_| {
                    let (u, v) = (uniform().max(1e-300), uniform());
                    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
                })
                .collect()
        })
        .collect();
    for i in 0..n {
        for j in 0..i {
            let dot: f64 = rows[i].iter().zip(&rows[j]).map(|(a, b)| a * b).sum();
            let done = rows[j].clone();
            rows[i].iter_mut().zip(&done).for_each(|(a, b)| *a -= dot * b);
        }
        let norm = rows[i].iter().map(|x| x * x).sum::<f64>().sqrt();
        rows[i].iter_mut().for_each(|x| *x /= norm);
    }
    rows.into_iter().map(|r| r.into_iter().map(|x| x as f32).collect()).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_rotation_is_orthogonal_and_keeps_cosines() {
        let q = super::rotation(16, 7);
        for (i, a) in q.iter().enumerate() {
            for (j, b) in q.iter().enumerate() {
                let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
                assert!((dot - if i == j { 1.0 } else { 0.0 }).abs() < 1e-5, "rows {i}, {j}: {dot}");
            }
        }
        assert_ne!(q[0][0], 1.0, "not the identity");
    }
}
