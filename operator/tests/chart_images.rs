//! One source of truth for image tags: the crate version. The chart's appVersion (the tag its
//! default image references use), its default repositories and the operator's built-in
//! defaults (`DEFAULT_BROKER_IMAGE`, `DEFAULT_OPERATOR_IMAGE`) must name exactly what
//! `e2e/images/build` tags: `<chart repository>:<crate version>`. A failure here means a
//! version bump or a rename reached one place only: change the chart (Chart.yaml
//! `appVersion`, values.yaml `*.image`) or `operator/src/cluster/settings.rs` to match.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use oxbow_operator::cluster::settings::{DEFAULT_BROKER_IMAGE, DEFAULT_OPERATOR_IMAGE};

fn chart_file(name: &str) -> serde_yaml::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../charts/oxbow")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("reading the chart");
    serde_yaml::from_str(&text).expect("parsing the chart")
}

fn string(value: &serde_yaml::Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value:?}"))
}

#[test]
fn chart_app_version_is_the_crate_version() {
    let chart = chart_file("Chart.yaml");
    assert_eq!(string(&chart["appVersion"]), env!("CARGO_PKG_VERSION"));
}

#[test]
fn chart_default_images_are_the_operator_defaults() {
    let values = chart_file("values.yaml");
    let version = env!("CARGO_PKG_VERSION");
    for (part, default) in [
        ("broker", DEFAULT_BROKER_IMAGE),
        ("operator", DEFAULT_OPERATOR_IMAGE),
    ] {
        let image = &values[part]["image"];
        // An empty tag means the chart's appVersion, checked above to be the crate version.
        let tag = image["tag"].as_str().unwrap_or("");
        assert!(
            tag.is_empty() || tag == version,
            "values.yaml {part}.image.tag is {tag:?}"
        );
        let reference = format!("{}:{version}", string(&image["repository"]));
        assert_eq!(reference, default, "{part} image");
    }
}
