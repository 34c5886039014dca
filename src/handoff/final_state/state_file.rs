//! The final state as it lies on disk (`{stem}.state.json`).
//!
//! Besides the attempts, the file carries the last attempt's fields at its top level
//! (`exit_code`, `ending`, `started_at`, `ended_at`, `message`, `requeued`): files written
//! before attempts were kept have only those, and scripts that read the file (and earlier
//! rayslurm versions on a login node) look there. They are written from the last attempt and
//! read only from a file without attempts, so they can never say something the attempts do not.

use serde::{Deserialize, Serialize};

use super::{Attempt, Ending, FinalState};

/// The file's fields, as written now and as every earlier version wrote them.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct StateFile {
    job_id: String,
    exit_code: Option<i32>,
    ending: Option<Ending>,
    /// RFC 3339.
    started_at: Option<String>,
    /// RFC 3339.
    ended_at: Option<String>,
    head_node: String,
    #[serde(default)]
    message: Option<String>,
    /// Missing in files written before requeues were followed.
    #[serde(default)]
    requeued: bool,
    /// Missing in files written before attempts were kept: the top-level fields are then the
    /// one attempt there was.
    #[serde(default)]
    attempts: Vec<Attempt>,
}

impl StateFile {
    /// The one attempt a file without attempts describes at its top level.
    fn only_attempt(&mut self) -> Result<Attempt, String> {
        let missing = |field: &str| format!("no attempts, and no `{field}`");
        Ok(Attempt {
            restart: 0,
            started_at: self
                .started_at
                .take()
                .ok_or_else(|| missing("started_at"))?,
            ended_at: self.ended_at.take().ok_or_else(|| missing("ended_at"))?,
            ending: self.ending.ok_or_else(|| missing("ending"))?,
            exit_code: self.exit_code.ok_or_else(|| missing("exit_code"))?,
            requeued: self.requeued,
            message: self.message.take(),
        })
    }
}

impl TryFrom<StateFile> for FinalState {
    type Error = String;

    fn try_from(mut file: StateFile) -> Result<Self, String> {
        let mut earlier = std::mem::take(&mut file.attempts);
        let last = match earlier.pop() {
            Some(last) => last,
            None => file.only_attempt()?,
        };
        Ok(Self {
            job_id: file.job_id,
            head_node: file.head_node,
            earlier,
            last,
        })
    }
}

impl From<FinalState> for StateFile {
    fn from(state: FinalState) -> Self {
        let last = state.last.clone();
        let mut attempts = state.earlier;
        attempts.push(state.last);
        Self {
            job_id: state.job_id,
            exit_code: Some(last.exit_code),
            ending: Some(last.ending),
            started_at: Some(last.started_at),
            ended_at: Some(last.ended_at),
            head_node: state.head_node,
            message: last.message,
            requeued: last.requeued,
            attempts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file as this version writes it: a requeued first attempt and the one after it.
    const WRITTEN_NOW: &str = r#"{"job_id":"7","exit_code":0,"ending":"completed","started_at":"c","ended_at":"d","head_node":"n2","message":null,"requeued":false,"attempts":[{"restart":0,"started_at":"a","ended_at":"b","ending":"time-limit","exit_code":143,"requeued":true,"message":"m"},{"restart":1,"started_at":"c","ended_at":"d","ending":"completed","exit_code":0,"requeued":false,"message":null}]}"#;

    #[test]
    fn the_file_keeps_its_shape() {
        let state: FinalState = serde_json::from_str(WRITTEN_NOW).unwrap();
        assert_eq!(state.attempt_count(), 2);
        assert_eq!(state.last().ending, Ending::Completed);
        let earlier: Vec<Ending> = state.attempts().map(|a| a.ending).collect();
        assert_eq!(earlier, [Ending::TimeLimit, Ending::Completed]);
        assert_eq!(serde_json::to_string(&state).unwrap(), WRITTEN_NOW);
    }

    #[test]
    fn a_state_written_before_attempts_were_kept_still_reads() {
        let old = r#"{"job_id":"7","exit_code":3,"ending":"failed","started_at":"a","ended_at":"b","head_node":"n","message":"why"}"#;
        let state: FinalState = serde_json::from_str(old).unwrap();
        assert_eq!(state.attempt_count(), 1);
        assert_eq!(
            (state.job_id.as_str(), state.head_node.as_str()),
            ("7", "n")
        );
        let last = state.last();
        assert_eq!(
            (last.restart, last.ending, last.exit_code, last.requeued),
            (0, Ending::Failed, 3, false)
        );
        assert_eq!(
            (last.started_at.as_str(), last.ended_at.as_str()),
            ("a", "b")
        );
        assert_eq!(last.message.as_deref(), Some("why"));
        // Written again, it gains its attempt and keeps its top level.
        let again: serde_json::Value = serde_json::to_value(&state).unwrap();
        assert_eq!(again["attempts"][0]["ending"], "failed");
        assert_eq!(
            (&again["ending"], &again["exit_code"]),
            (&"failed".into(), &3.into())
        );
    }

    #[test]
    fn a_requeued_state_without_attempts_is_one_requeued_attempt() {
        let old = r#"{"job_id":"7","exit_code":143,"ending":"time-limit","started_at":"a","ended_at":"b","head_node":"n","message":null,"requeued":true,"attempts":[]}"#;
        let state: FinalState = serde_json::from_str(old).unwrap();
        assert!(state.last().requeued);
        assert_eq!(state.attempt_count(), 2, "the next one is under way");
    }

    #[test]
    fn the_attempts_win_over_the_top_level() {
        let file = WRITTEN_NOW.replace(
            r#""exit_code":0,"ending":"completed""#,
            r#""exit_code":9,"ending":"failed""#,
        );
        let state: FinalState = serde_json::from_str(&file).unwrap();
        assert_eq!(
            (state.last().ending, state.last().exit_code),
            (Ending::Completed, 0)
        );
    }

    #[test]
    fn a_state_without_any_attempt_is_damaged() {
        let empty = r#"{"job_id":"7","head_node":"n","attempts":[]}"#;
        let err = serde_json::from_str::<FinalState>(empty)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no attempts"), "{err}");
    }
}
