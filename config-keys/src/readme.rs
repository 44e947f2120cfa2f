//! The configuration table of docs/configuration.md (linked from README.md), generated from
//! the catalog.

use crate::{BROKER_KEYS, TOPIC_KEYS};

/// The line before the generated table in docs/configuration.md.
pub const README_BEGIN: &str =
    "<!-- configuration keys: generated from config-keys/src (cargo test -p oxbow-config-keys) -->";
/// The line after it.
pub const README_END: &str = "<!-- end of configuration keys -->";

/// The broker keys' table, then the topic-only keys', in Markdown.
pub fn markdown_table() -> String {
    let mut out = String::from("| key | type | default | meaning |\n|---|---|---|---|\n");
    for key in BROKER_KEYS {
        let default = match key.shown_default {
            Some(shown) => shown.to_string(),
            None => format!("`{}`", key.default),
        };
        let mut meaning = key.doc.to_string();
        if let Some((min, max)) = key.range {
            meaning.push_str(&format!("; {}", range_text(min, max)));
        }
        if key.dynamic_only {
            meaning.push_str("; dynamic only");
        }
        if !key.choices.is_empty() {
            let choices: Vec<String> = key
                .choices
                .iter()
                .map(|c| {
                    if c.is_empty() {
                        "empty".to_string()
                    } else {
                        format!("`{c}`")
                    }
                })
                .collect();
            meaning.push_str(&format!("; one of {}", choices.join(", ")));
        }
        let topics: Vec<String> = TOPIC_KEYS
            .iter()
            .filter(|t| t.broker_synonym == Some(key.name))
            .map(|t| format!("`{}`", t.name))
            .collect();
        if !topics.is_empty() {
            meaning.push_str(&format!(" (topic: {})", topics.join(", ")));
        }
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            key.name,
            key.kind.name(),
            default,
            meaning
        ));
    }
    out.push_str("\nTopic configs without a broker default:\n\n| topic key | type | meaning |\n|---|---|---|\n");
    for key in TOPIC_KEYS.iter().filter(|k| k.broker_synonym.is_none()) {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            key.name,
            key.kind().name(),
            key.doc()
        ));
    }
    out
}

/// `min` to `max` as a reader wants it: the type bounds by name.
fn range_text(min: i64, max: i64) -> String {
    let bound = |v: i64| match v {
        v if v == i64::MAX => "2^63-1".to_string(),
        v if v == i64::from(i32::MAX) => "2^31-1".to_string(),
        v if v == i64::from(i16::MAX) => "32767".to_string(),
        v if v == i64::from(u32::MAX) => "2^32-1".to_string(),
        v => v.to_string(),
    };
    format!("{} to {}", bound(min), bound(max))
}
