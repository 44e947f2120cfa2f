use std::collections::BTreeSet;

use super::*;

#[test]
fn names_are_unique_and_every_synonym_is_a_broker_key() {
    let broker: BTreeSet<&str> = BROKER_KEYS.iter().map(|k| k.name).collect();
    assert_eq!(broker.len(), BROKER_KEYS.len(), "a broker key twice");
    let topic: BTreeSet<&str> = TOPIC_KEYS.iter().map(|k| k.name).collect();
    assert_eq!(topic.len(), TOPIC_KEYS.len(), "a topic key twice");
    for key in TOPIC_KEYS {
        if let Some(synonym) = key.broker_synonym {
            assert!(
                broker_key(synonym).is_some(),
                "{}: {synonym} is no broker key",
                key.name
            );
        }
        assert!(!key.doc().is_empty(), "{} has no documentation", key.name);
    }
    assert_eq!(broker_synonym("segment.bytes"), Some("log.segment.bytes"));
    assert_eq!(broker_synonym("remote.storage.enable"), None);
}

#[test]
fn every_default_is_a_value_of_its_kind_and_among_its_choices() {
    for key in BROKER_KEYS {
        assert!(!key.doc.is_empty(), "{} has no documentation", key.name);
        let value = key.default;
        if value.is_empty() {
            continue;
        }
        let fits = match key.kind {
            Kind::Boolean => matches!(value, "true" | "false"),
            Kind::Int => value.parse::<i32>().is_ok(),
            Kind::Short => value.parse::<i16>().is_ok(),
            Kind::Long => value.parse::<i64>().is_ok(),
            Kind::Double => value.parse::<f64>().is_ok(),
            Kind::String | Kind::List | Kind::Class | Kind::Password => true,
        };
        assert!(
            fits,
            "{}: default {value} is not a {}",
            key.name,
            key.kind.name()
        );
        if !key.choices.is_empty() {
            assert!(
                key.choices.contains(&value),
                "{}: default {value} not allowed",
                key.name
            );
        }
    }
    assert_eq!(
        topic_key("cleanup.policy").map(|k| k.kind()),
        Some(Kind::List)
    );
    assert_eq!(
        topic_key("cleanup.policy").map(|k| k.choices()),
        Some(CLEANUP_POLICIES)
    );
    assert_eq!(
        topic_key("retention.ms").map(|k| k.kind()),
        Some(Kind::Long)
    );
}

/// docs/configuration.md's table is generated: `OXBOW_UPDATE_README=1 cargo test -p
/// oxbow-config-keys` rewrites it after a change here.
#[test]
fn readme_lists_exactly_the_catalog() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");
    let readme = std::fs::read_to_string(path).expect("docs/configuration.md");
    let begin = readme
        .find(README_BEGIN)
        .expect("docs/configuration.md has the begin marker");
    let end = readme
        .find(README_END)
        .expect("docs/configuration.md has the end marker");
    let body_start = begin + README_BEGIN.len() + 1;
    let current = &readme[body_start..end];
    let wanted = markdown_table();
    if current == wanted {
        return;
    }
    if std::env::var_os("OXBOW_UPDATE_README").is_some() {
        let updated = format!("{}{}{}", &readme[..body_start], wanted, &readme[end..]);
        std::fs::write(path, updated).expect("writing docs/configuration.md");
        return;
    }
    panic!(
        "docs/configuration.md's table is stale: run OXBOW_UPDATE_README=1 cargo test -p oxbow-config-keys"
    );
}
