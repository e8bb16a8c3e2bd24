//! One step of a lifecycle action (a release, a removal, `doctor --try`'s rehearsal), as the
//! text output and `--json` show it, with its one printer.
use std::time::Duration;

use serde::Serialize;

#[derive(Debug, Serialize)]
pub(crate) struct Step {
    pub step: &'static str,
    pub ok: bool,
    /// How long it took, for the steps that are timed (the rehearsal's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    pub detail: String,
}

impl Step {
    /// A step named `name` that took `took`.
    pub(crate) fn timed(
        name: &'static str,
        ok: bool,
        took: Duration,
        detail: impl Into<String>,
    ) -> Step {
        Step {
            step: name,
            ok,
            ms: Some(u64::try_from(took.as_millis()).unwrap_or(u64::MAX)),
            detail: detail.into(),
        }
    }

    /// The step as one line, its name padded to `width`: `ok   ports         none held` (or
    /// `-    …` when it did not succeed); a timed step reads `fetch  ok (12ms) …` (or
    /// `FAILED`).
    pub(crate) fn line(&self, width: usize) -> String {
        match self.ms {
            Some(ms) => format!(
                "{:<width$} {} ({}) {}",
                self.step,
                if self.ok { "ok" } else { "FAILED" },
                crate::ground::human::duration(std::time::Duration::from_millis(ms)),
                self.detail
            ),
            None => format!(
                "{} {:<width$} {}",
                if self.ok { "ok  " } else { "-   " },
                self.step,
                self.detail
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_prints_as_one_line_timed_or_not() {
        let plain = Step {
            step: "ports",
            ok: true,
            ms: None,
            detail: "none held".into(),
        };
        assert_eq!(plain.line(13), "ok   ports         none held");
        let failed = Step::timed("fetch", false, Duration::from_millis(12), "no remote");
        assert_eq!(failed.line(8), "fetch    FAILED (12ms) no remote");
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"step":"ports","ok":true,"detail":"none held"}"#
        );
        assert_eq!(
            serde_json::to_string(&failed).unwrap(),
            r#"{"step":"fetch","ok":false,"ms":12,"detail":"no remote"}"#
        );
    }
}
