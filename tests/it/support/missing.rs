//! Data a test needs from outside the repository (a tool, a second CPU, a kernel feature):
//! shared by the integration tests and the library's unit tests (`test_tree`), so that both
//! treat its absence one way.

/// Data a test needs is missing: under CI (`CI=true`, where the data is provided) that is a
/// failure; elsewhere the test is skipped with this message.
pub(crate) fn missing_data(what: &str) {
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "missing: {what}; CI provides it, so this test fails instead of skipping"
    );
    eprintln!("skipped: missing {what}");
}
