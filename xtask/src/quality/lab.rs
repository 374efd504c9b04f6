//! Ranking experiments in memory: the same embedder, BM25 encoder, fusion and time lift as
//! retrieval, over a quality set held in vectors, so a candidate method is measured in seconds
//! (`cargo xtask quality lab`). What a method is worth is then confirmed through the real
//! pipeline (`quality::evaluate`).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use shared::activities::activity::Activity;
use shared::activities::index::bm25::Bm25;
use shared::activities::ranking::cosine;
use shared::activities::when::Wanted;

use super::{DevQuery, Scores};

const ZONE: chrono_tz::Tz = chrono_tz::Asia::Shanghai;
const RRF_K: f32 = 60.0;

/// A view's BM25 term weights per document, and its IDF per term.
pub type Sparse = (Vec<HashMap<u32, f32>>, HashMap<u32, f32>);
/// A document view: a name and how an activity is written in it.
type View = (&'static str, fn(&Activity) -> String);

/// A quality set with every view of it embedded.
pub struct Lab {
    pub activities: Vec<Activity>,
    pub queries: Vec<DevQuery>,
    now: DateTime<Utc>,
    model: std::sync::Arc<e5::E5Model>,
    /// Sparse document vectors per document view, and the view's IDF.
    sparse: HashMap<&'static str, Sparse>,
    /// Dense document vectors per view.
    dense: HashMap<&'static str, Vec<Vec<f32>>>,
    bm25: Bm25,
    /// Per activity: the vectors of its description's clauses (passages).
    pub clauses: Vec<Vec<Vec<f32>>>,
    /// Facet vectors as queries and as passages ([`FACETS`]).
    pub facet_q: Vec<Vec<f32>>,
    pub facet_p: Vec<Vec<f32>>,
}

/// The description's clauses, cut at punctuation (two characters or more).
pub fn clauses(a: &Activity) -> Vec<String> {
    a.description
        .split(['，', '。', '；', '！', '、', ',', '.', ';', '!'])
        .map(str::trim)
        .filter(|c| c.chars().count() >= 2)
        .map(str::to_owned)
        .collect()
}

/// The activity's time and place as a line: "周六下午，周末，上海武康路".
pub fn when_where(a: &Activity) -> String {
    use chrono::{Datelike, Timelike};
    let local = a.start_at.with_timezone(&ZONE);
    let week = if local.weekday().number_from_monday() >= 6 { "周末" } else { "工作日" };
    format!(
        "{}{}，{week}，{}",
        shared::activities::activity::day_of_week(local.weekday()),
        shared::activities::activity::time_of_day(local.hour()),
        a.location_name
    )
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Lab {
    pub fn new(
        model: std::sync::Arc<e5::E5Model>,
        activities: Vec<Activity>,
        queries: Vec<DevQuery>,
        now: DateTime<Utc>,
        full: bool,
    ) -> Self {
        let mut lab = Lab {
            activities,
            queries,
            now,
            model,
            sparse: HashMap::new(),
            dense: HashMap::new(),
            bm25: Bm25::new(),
            clauses: Vec::new(),
            facet_q: Vec::new(),
            facet_p: Vec::new(),
        };
        // `plain`: BM25's text; `own`: the embedder's (the activity's own words).
        let views: [View; 8] = [
            ("plain", |a| a.lexical_text(ZONE)),
            ("own", Activity::dense_text),
            ("described", |a| format!("{}\n{}\n{}", a.description, a.kind, a.tags.join(", "))),
            ("titled", |a| format!("{}：{}", a.title, a.description)),
            // Named vectors: what it is, what happens, when and where.
            ("title+type", |a| format!("{}（{}：{}）", a.title, a.kind, a.tags.join("、"))),
            ("description", |a| a.description.clone()),
            ("when+where", when_where),
            ("questions", |a| a.questions(ZONE)),
        ];
        // Without `full`, what the baselines need: BM25's text (sparse only) and the own words.
        for (name, view) in views.into_iter().filter(|(name, _)| full || ["plain", "own"].contains(name)) {
            let texts: Vec<String> = lab.activities.iter().map(view).collect();
            let tokens: usize = texts.iter().map(|t| lab.model.token_ids(t, false).len()).sum();
            eprintln!("  view {name}: {:.1} tokens per activity", tokens as f64 / texts.len().max(1) as f64);
            lab.sparse.insert(name, sparse(&lab.bm25, &texts));
            if !full && name == "plain" {
                continue;
            }
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            lab.dense.insert(name, e5::embed_parallel(&lab.model, &refs, false, threads()).0);
            let symmetric = format!("{name}+query:");
            lab.dense.insert(
                Box::leak(symmetric.into_boxed_str()),
                e5::embed_parallel(&lab.model, &refs, true, threads()).0,
            );
        }
        if !full {
            return lab;
        }
        let all: Vec<Vec<String>> = lab.activities.iter().map(clauses).collect();
        let flat: Vec<&str> = all.iter().flatten().map(String::as_str).collect();
        let mut vectors = e5::embed_parallel(&lab.model, &flat, false, threads()).0.into_iter();
        lab.clauses = all.iter().map(|c| vectors.by_ref().take(c.len()).collect()).collect();
        lab.facet_q = facet_vectors(&lab, true);
        lab.facet_p = facet_vectors(&lab, false);
        lab
    }

    pub fn embed_query(&self, text: &str) -> Vec<f32> {
        e5::embed_parallel(&self.model, &[text], true, 1).0.remove(0)
    }

    /// BM25 scores of `query` on `view`, best first (only documents sharing a term).
    pub fn lexical(&self, view: &str, query: &str) -> Vec<(usize, f32)> {
        lexical(&self.bm25, &self.sparse[view], query)
    }

    /// The IDF of each of `query`'s BM25 terms on `view` (0 for a term no document has), and
    /// the largest IDF a term can have there (one document).
    pub fn idfs(&self, view: &str, query: &str) -> (Vec<f32>, f32) {
        let (docs, idf) = &self.sparse[view];
        let n = docs.len() as f32;
        let q = self.bm25.query(query);
        (q.indices.iter().map(|k| idf.get(k).copied().unwrap_or(0.0)).collect(), (1.0 + (n - 0.5) / 1.5).ln())
    }

    /// Cosines of `vector` to every document of `view`, best first, those at or above `floor`.
    pub fn dense(&self, view: &str, vector: &[f32], floor: f32) -> Vec<(usize, f32)> {
        let mut out: Vec<(usize, f32)> = self.dense[view]
            .iter()
            .enumerate()
            .map(|(i, d)| (i, cosine(vector, d)))
            .filter(|(_, s)| *s >= floor)
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }

    pub fn doc_vector(&self, view: &str, i: usize) -> &[f32] {
        &self.dense[view][i]
    }

    /// The time lift retrieval applies, × (1 + `boost` × fit) (retrieval's `TIME_BOOST` is 0.5).
    pub fn time_lift_by(&self, query: &str, ranked: &mut [(usize, f32)], boost: f32) {
        let wanted = Wanted::parse(query, self.now, ZONE);
        if wanted.is_empty() {
            return;
        }
        for (i, s) in ranked.iter_mut() {
            *s *= 1.0 + boost * wanted.fit(self.activities[*i].start_at, ZONE);
        }
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    }

    /// Scores of `method` (query → ranked document indices) by (kind, split), plus "all".
    pub fn evaluate(&self, method: impl Fn(&DevQuery) -> Vec<(usize, f32)>) -> BTreeMap<(String, String), Scores> {
        let ranked = self
            .queries
            .iter()
            .map(|q| {
                (
                    q.id.clone(),
                    method(q).into_iter().take(super::DEPTH).map(|(i, _)| self.activities[i].id.clone()).collect(),
                )
            })
            .collect();
        super::scores_of(&self.queries, &ranked)
    }
}

/// `texts` as BM25 document vectors, with Qdrant's IDF modifier over them:
/// ln(1 + (N - n + 0.5) / (n + 0.5)).
pub fn sparse(bm25: &Bm25, texts: &[String]) -> Sparse {
    let docs: Vec<HashMap<u32, f32>> = texts
        .iter()
        .map(|t| {
            let v = bm25.document(t);
            v.indices.into_iter().zip(v.values).collect()
        })
        .collect();
    let mut df: HashMap<u32, f32> = HashMap::new();
    docs.iter().flat_map(HashMap::keys).for_each(|k| *df.entry(*k).or_default() += 1.0);
    let n = docs.len() as f32;
    let idf = df.into_iter().map(|(k, c)| (k, (1.0 + (n - c + 0.5) / (c + 0.5)).ln())).collect();
    (docs, idf)
}

/// BM25 scores of `query` over `sparse`'s documents, best first (only those sharing a term).
pub fn lexical(bm25: &Bm25, (docs, idf): &Sparse, query: &str) -> Vec<(usize, f32)> {
    let q = bm25.query(query);
    let mut out: Vec<(usize, f32)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (i, q.indices.iter().zip(&q.values).filter_map(|(k, w)| Some(w * d.get(k)? * idf[k])).sum()))
        .filter(|(_, s): &(usize, f32)| *s > 0.0)
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// Weighted reciprocal rank fusion of ranked lists.
pub fn rrf(lists: &[(&[(usize, f32)], f32)]) -> Vec<(usize, f32)> {
    let mut scores: HashMap<usize, f32> = HashMap::new();
    for (list, weight) in lists {
        for (rank, (i, _)) in list.iter().enumerate() {
            *scores.entry(*i).or_default() += weight / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut out: Vec<(usize, f32)> = scores.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// A bank of what people come to an activity for, each in a few plain phrasings: generic
/// dimensions of activities (noise, energy, company, cost, setting, purpose), not any query's words.
pub const FACETS: &[(&str, &[&str])] = &[
    ("quiet", &["安静的活动，环境很静，不用说话", "氛围安静平和，可以静静待着"]),
    ("lively", &["热闹的活动，人多，气氛很嗨", "声音很大、很吵、很热烈的场合"]),
    ("rest", &["放松休息，什么都不用做，恢复精力", "身心放松减压，被疗愈的感觉"]),
    ("intense", &["高强度运动，大量出汗，体力消耗很大", "很累的运动挑战，需要好体力"]),
    ("light", &["轻度活动身体，运动量小，不累", "慢节奏地走走动动，舒展身体"]),
    ("mingle", &["和陌生人交流互动，结识新朋友", "社交活动，需要和很多人聊天"]),
    ("solo", &["一个人参加也自在，不需要和别人互动", "独自一人安静地做自己的事"]),
    ("kids", &["亲子活动，适合带小孩一起参加", "儿童和家长一起玩"]),
    ("pets", &["可以带宠物狗一起参加", "和猫狗等动物相处"]),
    ("free", &["免费参加，不收费", "花很少的钱，便宜实惠"]),
    ("indoor", &["室内活动，不受天气影响", "在屋子里进行，刮风下雨都可以"]),
    ("outdoor", &["户外活动，在大自然里", "在室外晒太阳，呼吸新鲜空气"]),
    ("food", &["吃美食，吃饭聚餐", "品尝各种好吃的食物"]),
    ("alcohol", &["喝酒，酒吧，微醺", "品酒，喝啤酒鸡尾酒"]),
    ("craft", &["学习一门手艺，亲手做出作品", "动手制作手工，成品可以带走"]),
    ("culture", &["艺术文化，看展览和演出", "欣赏艺术作品，人文历史"]),
    ("brain", &["动脑筋，推理解谜，策略思考", "益智游戏，锻炼思维"]),
    ("romance", &["适合情侣约会，浪漫有氛围", "两个人一起度过的浪漫时光"]),
    ("volunteer", &["公益志愿服务，帮助别人", "为社区和他人做贡献"]),
    ("thrill", &["刺激冒险，紧张尖叫", "恐怖惊悚，心跳加速"]),
    ("release", &["发泄情绪，大喊大叫，释放压力", "把坏情绪都释放出来"]),
    ("water", &["水上活动，在水里玩", "游泳、划船、戏水"]),
    ("gentle", &["老年人也能参加，节奏慢，不费体力", "强度很低，任何年龄都可以"]),
    ("offline", &["远离手机和网络，专注当下", "与世隔绝，放下电子设备"]),
    ("music", &["音乐，唱歌，听现场演出", "乐器和歌声"]),
    ("laugh", &["搞笑有趣，开怀大笑", "幽默欢乐的气氛"]),
    ("learn", &["学习新知识和技能，上课", "老师讲解，提升自己"]),
];

/// Each facet's vector, the mean of its phrasings embedded as `query` (or passage).
pub fn facet_vectors(lab: &Lab, query: bool) -> Vec<Vec<f32>> {
    FACETS
        .iter()
        .map(|(_, phrases)| {
            let (vectors, _) = e5::embed_parallel(&lab.model, phrases, query, threads());
            let mut mean = vec![0.0f32; vectors[0].len()];
            for v in &vectors {
                for (m, x) in mean.iter_mut().zip(v) {
                    *m += x / vectors.len() as f32;
                }
            }
            let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt();
            mean.iter().map(|x| x / norm).collect()
        })
        .collect()
}

/// z-scores of `values`.
pub fn z(values: &[f32]) -> Vec<f32> {
    let n = values.len().max(1) as f32;
    let mean = values.iter().sum::<f32>() / n;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / n).sqrt().max(1e-6);
    values.iter().map(|v| (v - mean) / sd).collect()
}

impl Lab {
    /// Per activity of `view`, its z-scored affinity to every facet (z over the corpus).
    pub fn doc_facets(&self, view: &str) -> Vec<Vec<f32>> {
        let docs = &self.dense[view];
        let per_facet: Vec<Vec<f32>> =
            self.facet_q.iter().map(|f| z(&docs.iter().map(|d| cosine(f, d)).collect::<Vec<_>>())).collect();
        (0..docs.len()).map(|i| per_facet.iter().map(|col| col[i]).collect()).collect()
    }

    /// A query's weight on each facet: z over the facets, above `cut`, summing to 1.
    pub fn query_facets(&self, v: &[f32], cut: f32) -> Vec<f32> {
        let zs = z(&self.facet_p.iter().map(|f| cosine(v, f)).collect::<Vec<_>>());
        let w: Vec<f32> = zs.iter().map(|x| (x - cut).max(0.0)).collect();
        let total: f32 = w.iter().sum();
        if total > 0.0 { w.iter().map(|x| x / total).collect() } else { w }
    }
}
