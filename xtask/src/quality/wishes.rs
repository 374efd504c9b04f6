//! `cargo xtask quality --fit-wishes`: fits what a wish wants ([`shared::activities::wish`]) on
//! the training data of `benches/facets/` (wishes labelled with the facets they want and avoid,
//! activities with the facets they have; written apart from every quality set), with the
//! bundled e5 embedding both as retrieval does, and writes `shared/src/activities/wish.json`.
//! No quality set is read: `cargo xtask quality` then measures the result.

use std::time::Instant;

use chrono::{Duration, TimeZone};
use serde::Deserialize;
use shared::activities::activity::{Activity, Location, Status};
use shared::activities::embedder::{EmbeddingService, Input};
use shared::activities::ranking::normalised_sum;
use shared::activities::wish::{FACETS, Wishes};

/// A training wish: `{text, lang, wants, avoids}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wish {
    text: String,
    #[allow(dead_code)]
    lang: String,
    wants: Vec<String>,
    avoids: Vec<String>,
}

/// A training activity: what `POST /activities` takes, with its weekday and hour, and facets.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Labelled {
    title: String,
    description: String,
    #[serde(rename = "type")]
    kind: String,
    tags: Vec<String>,
    hour: u32,
    weekday: i64,
    #[serde(rename = "maxParticipants")]
    max_participants: u32,
    facets: Vec<String>,
}

/// One column per facet: `value` where `has` names it; a name not in [`FACETS`] is an error.
fn columns(has: &[(&[String], f32)]) -> crate::Result<Vec<f32>> {
    let mut row = vec![0f32; FACETS.len()];
    for (names, value) in has {
        for name in names.iter() {
            let i = FACETS.iter().position(|f| f == name).ok_or_else(|| format!("unknown facet {name:?}"))?;
            row[i] = *value;
        }
    }
    Ok(row)
}

/// The activity `l` describes, on its weekday and hour of the week of Monday 2026-11-23 in
/// Shanghai: what indexing embeds is made from these fields.
fn activity(l: &Labelled, i: usize) -> crate::Result<Activity> {
    let zone = chrono_tz::Asia::Shanghai;
    let monday = zone.with_ymd_and_hms(2026, 11, 23, 0, 0, 0).single().ok_or("a Monday in Shanghai")?;
    let start = monday + Duration::days(l.weekday) + Duration::hours(i64::from(l.hour));
    Ok(Activity {
        id: format!("train-{i}"),
        title: l.title.clone(),
        description: l.description.clone(),
        kind: l.kind.clone(),
        tags: l.tags.clone(),
        start_at: start.with_timezone(&chrono::Utc),
        location_name: String::new(),
        location: Location { lat: 31.23, lng: 121.47 },
        status: Status::Active,
        current_participants: 0,
        max_participants: l.max_participants,
        updated_at: None,
    })
}

/// Embeds `texts` as queries, 64 a call.
async fn embed(embedding: &EmbeddingService, texts: &[String]) -> crate::Result<Vec<Vec<f32>>> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(64) {
        out.extend(embedding.vectors("indexing", "fit-wishes", chunk, Input::Query).await?);
    }
    Ok(out)
}

/// Wishes' texts and activities, each with its facet row.
pub type Training = (Vec<(String, Vec<f32>)>, Vec<(Activity, Vec<f32>)>);

/// The training data under `dirs` (each with `queries.jsonl` and `activities.jsonl`): each
/// wish's text with its facet row (+1 wanted, -1 avoided), each activity with its row (1 had).
pub fn training(dirs: &[std::path::PathBuf]) -> crate::Result<Training> {
    let (mut wishes, mut activities) = (Vec::new(), Vec::new());
    for dir in dirs {
        for w in super::lines::<Wish>(&dir.join("queries.jsonl"))? {
            let row = columns(&[(&w.wants, 1.0), (&w.avoids, -1.0)])?;
            wishes.push((w.text, row));
        }
        for l in super::lines::<Labelled>(&dir.join("activities.jsonl"))? {
            let row = columns(&[(&l.facets, 1.0)])?;
            activities.push((activity(&l, activities.len())?, row));
        }
    }
    Ok((wishes, activities))
}

/// The fit, with `embedding` the bundled e5.
pub async fn fit(embedding: &EmbeddingService) -> crate::Result {
    let (wishes, labelled) = training(&[crate::root().join("benches/facets")])?;
    let vector = embedding.vector_name().ok_or("no embedder")?;
    let zone = chrono_tz::Asia::Shanghai;
    let started = Instant::now();
    let texts: Vec<String> = wishes.iter().map(|(t, _)| t.clone()).collect();
    let wish_samples: Vec<(Vec<f32>, Vec<f32>)> =
        embed(embedding, &texts).await?.into_iter().zip(wishes).map(|(v, (_, row))| (v, row)).collect();
    // As indexing embeds an activity with the bundled e5: both views as queries, summed.
    let views: Vec<String> = labelled.iter().flat_map(|(a, _)| a.dense_views(zone)).collect();
    let activity_samples: Vec<(Vec<f32>, Vec<f32>)> = embed(embedding, &views)
        .await?
        .chunks(2)
        .map(normalised_sum)
        .zip(labelled)
        .map(|(v, (_, row))| (v, row))
        .collect();
    let embedded = started.elapsed();
    let wishes_model = Wishes::fit(&wish_samples, &activity_samples, &vector);
    let path = crate::root().join("shared/src/activities/wish.json");
    std::fs::write(&path, serde_json::to_string(&wishes_model)? + "\n")?;
    println!(
        "fitted on {} wishes and {} activities (embedded in {:.1} s, fitted in {:.1} s); wrote {}",
        wish_samples.len(),
        activity_samples.len(),
        embedded.as_secs_f64(),
        (started.elapsed() - embedded).as_secs_f64(),
        path.display()
    );
    Ok(())
}
