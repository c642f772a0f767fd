//! The one round runner of the measurements taken in rounds: `measure jitter|timer --repeat N`
//! (each round a run of its own) and `check`'s rounds (a jitter run, then a timer run, each
//! round). A round is numbered from 1 and knows how many there are, so that every command says
//! it the same way (`round 2 of 3`).

use std::fmt;

/// One round of several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Round {
    /// Its number, from 1.
    pub number: u32,
    /// How many rounds there are.
    pub of: u32,
}

impl Round {
    /// Whether the round is worth saying: there are several.
    pub(crate) fn worth_saying(self) -> bool {
        self.of > 1
    }
}

/// `round 2 of 3`.
impl fmt::Display for Round {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "round {} of {}", self.number, self.of)
    }
}

/// What a round tells the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    /// Go on with the next round.
    Next,
    /// Stop here: the run was interrupted, or did not measure what the rounds after it would
    /// be compared with.
    Stop,
}

/// Runs `of` rounds (at least one), `round` each in order, until the last or the first that
/// says [`After::Stop`]; an error ends the rounds and is returned.
pub(crate) fn run<E>(of: u32, mut round: impl FnMut(Round) -> Result<After, E>) -> Result<(), E> {
    let of = of.max(1);
    for number in 1..=of {
        if round(Round { number, of })? == After::Stop {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_run_in_order_until_one_says_stop() {
        let mut seen = Vec::new();
        run::<()>(4, |round| {
            seen.push(round.to_string());
            Ok(if round.number == 2 {
                After::Stop
            } else {
                After::Next
            })
        })
        .unwrap();
        assert_eq!(seen, ["round 1 of 4", "round 2 of 4"]);
        let mut all = 0;
        run::<()>(3, |_| {
            all += 1;
            Ok(After::Next)
        })
        .unwrap();
        assert_eq!(all, 3);
        let mut once = Vec::new();
        run::<()>(0, |round| {
            once.push(round);
            Ok(After::Next)
        })
        .unwrap();
        assert_eq!(once, [Round { number: 1, of: 1 }]);
        assert!(!once[0].worth_saying());
        assert_eq!(run(5, |_| Err("broken")), Err("broken"));
    }
}
