//! Defects of apply, revert and verify found in issue 18, each reproduced from the command line
//! on a copy of a fixture machine.

use crate::support::lowlat;
use predicates::prelude::*;

#[test]
fn apply_and_revert_help_say_they_need_the_live_machine_or_a_root() {
    // The global --snapshot shows in their help, and they refuse it: the help says so.
    for command in ["apply", "revert"] {
        lowlat(&[command, "--help"]).assert().success().stdout(
            predicate::str::contains(
                "Needs the live machine or --root DIR (--snapshot is refused: a snapshot is read-only).",
            ),
        );
    }
}
