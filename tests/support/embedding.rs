//! A fake OpenAI-compatible `/embeddings` server on 127.0.0.1 whose vectors carry meaning:
//! each dimension is a concept (a list of Chinese words), so "玩水" is near "室内冲浪" without
//! sharing a word, the way a real model behaves. Latency and faults are set per test.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Concepts: dimension `i` counts the words of `CONCEPTS[i]` found in the text.
pub const CONCEPTS: &[&[&str]] = &[
    &["安静", "发呆", "放空", "白噪音", "冥想", "独处", "静下心", "不用说话", "减压", "压力"],
    &["热闹", "嗨", "派对", "啤酒", "大排档", "欢唱", "蹦迪", "人多", "燥"],
    &["玩水", "冲浪", "游泳", "皮划艇", "浪池", "泳池"],
    &["桌游", "卡坦岛", "狼人杀", "剧本杀", "小局"],
    &["社恐", "不用主动社交", "不需要社交", "一个人"],
    &["运动", "跑步", "健身", "出汗", "飞盘", "攀岩", "篮球", "羽毛球"],
    &["读书", "看书", "书"],
    &["美食", "撸串", "火锅", "烹饪", "做饭", "早午餐"],
];

/// The last dimension is a small constant, so no vector is zero.
pub fn concept_vector(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0; dims];
    for (i, words) in CONCEPTS.iter().enumerate().take(dims - 1) {
        v[i] = words.iter().filter(|w| text.contains(*w)).count() as f32;
    }
    v[dims - 1] = 0.2;
    v
}

struct Concepts {
    dims: usize,
    latency: Duration,
    calls: Arc<AtomicUsize>,
    inputs: Arc<AtomicUsize>,
}

impl Respond for Concepts {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let inputs: Vec<String> = match &body["input"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items.iter().filter_map(|i| i.as_str().map(String::from)).collect(),
            _ => vec![],
        };
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inputs.fetch_add(inputs.len(), Ordering::SeqCst);
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": concept_vector(t, self.dims)}))
            .collect();
        let tokens: usize = inputs.iter().map(|t| t.chars().count()).sum();
        ResponseTemplate::new(200)
            .set_delay(self.latency)
            .set_body_json(json!({"object": "list", "model": body["model"], "data": data,
                                  "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}))
    }
}

/// The bundled e5 as an API: its vectors under a fixed signed permutation of their dimensions
/// (an orthogonal map: every cosine kept, every coordinate moved), as queries.
struct TurnedE5 {
    model: Arc<e5::E5Model>,
    calls: Arc<AtomicUsize>,
    inputs: Arc<AtomicUsize>,
}

/// Coordinate `i` of the turned vector: coordinate `7 i + 3 (mod n)` of e5's, negated every third.
pub fn turned(v: &[f32]) -> Vec<f32> {
    let n = v.len();
    (0..n).map(|i| if i % 3 == 0 { -v[(7 * i + 3) % n] } else { v[(7 * i + 3) % n] }).collect()
}

impl Respond for TurnedE5 {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let inputs: Vec<String> =
            body["input"].as_array().into_iter().flatten().filter_map(|i| i.as_str().map(String::from)).collect();
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inputs.fetch_add(inputs.len(), Ordering::SeqCst);
        let texts: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let (vectors, tokens) = self.model.embed(&texts, true);
        let data: Vec<Value> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": turned(v)}))
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"object": "list", "model": body["model"], "data": data,
                                                        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}))
    }
}

/// A running fake embedding server and its counters.
pub struct EmbeddingServer {
    server: crate::FakeServer,
    pub dims: usize,
    calls: Arc<AtomicUsize>,
    inputs: Arc<AtomicUsize>,
}

impl EmbeddingServer {
    /// The fake server itself (to mount more mocks on).
    pub fn server(&self) -> &MockServer {
        &self.server
    }

    /// Answers every `POST /embeddings` with concept vectors of `dims` after `latency`.
    pub async fn start(dims: usize, latency: Duration) -> Self {
        let server = crate::FakeServer::start().await;
        let calls = Arc::new(AtomicUsize::new(0));
        let inputs = Arc::new(AtomicUsize::new(0));
        Mock::given(method("POST"))
            .and(path("/embeddings"))
            .respond_with(Concepts { dims, latency, calls: calls.clone(), inputs: inputs.clone() })
            .mount(&server)
            .await;
        Self { server, dims, calls, inputs }
    }

    /// Answers every `POST /embeddings` with the bundled e5's vectors (the model at `model`)
    /// turned ([`turned`]): another space with the same cosines.
    pub async fn turned_e5(model: &std::path::Path) -> Self {
        let model = Arc::new(e5::E5Model::load(model).expect("the bundled model (infra/fetch-model.sh)"));
        let dims = model.dimensions();
        let server = crate::FakeServer::start().await;
        let calls = Arc::new(AtomicUsize::new(0));
        let inputs = Arc::new(AtomicUsize::new(0));
        Mock::given(method("POST"))
            .and(path("/embeddings"))
            .respond_with(TurnedE5 { model, calls: calls.clone(), inputs: inputs.clone() })
            .mount(&server)
            .await;
        Self { server, dims, calls, inputs }
    }

    /// Replaces the answers with `status` (a fault), for every later call.
    pub async fn fail_with(&self, status: u16) {
        self.server().reset().await;
        Mock::given(method("POST")).respond_with(ResponseTemplate::new(status)).mount(self.server()).await;
    }

    pub fn uri(&self) -> String {
        self.server().uri()
    }

    /// Requests answered so far (concept answers only).
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Texts embedded so far.
    pub fn inputs(&self) -> usize {
        self.inputs.load(Ordering::SeqCst)
    }
}
