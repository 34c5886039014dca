//! What a follower shows on stderr while it waits: a spinner on a terminal, plain lines (one a
//! change) otherwise, and the closing line with the job's end.

use std::time::Duration;

use chrono::{DateTime, FixedOffset, Local};
use indicatif::{ProgressBar, ProgressStyle};

use crate::printer::Printer;
use crate::runs::log_tail::TailEvent;
use crate::runs::status::JobStatus;
use crate::runs::store::RunRecord;
use crate::slurm::duration;
use crate::slurm::query::{Phase, QueueEntry};

/// State lines on stderr: a spinner on a terminal while the job waits, plain lines (one a
/// change) otherwise.
pub(super) struct Display<'a> {
    record: &'a RunRecord,
    printer: &'a Printer,
    submitted: Option<DateTime<FixedOffset>>,
    spinner: Option<ProgressBar>,
    /// Once the log flows, no spinner is drawn over it.
    log_started: bool,
    last_label: Option<String>,
    squeue_failing: bool,
    running_since_shown: bool,
}

impl<'a> Display<'a> {
    pub(super) fn new(record: &'a RunRecord, printer: &'a Printer) -> Self {
        Self {
            record,
            printer,
            submitted: record.submitted(),
            spinner: None,
            log_started: false,
            last_label: None,
            squeue_failing: false,
            running_since_shown: false,
        }
    }

    pub(super) fn job(&self) -> String {
        format!("job {} ({})", self.record.job_id, self.record.exp_name)
    }

    pub(super) fn waited(&self) -> String {
        let secs = self
            .submitted
            .map(|t| (Local::now().fixed_offset() - t).num_seconds().max(0))
            .unwrap_or(0);
        duration::format(u64::try_from(secs).unwrap_or(0))
    }

    pub(super) fn state(&mut self, entry: &QueueEntry) {
        if self.squeue_failing {
            self.squeue_failing = false;
            self.line(&format!(
                "squeue answers again; {} is {}",
                self.job(),
                entry.state.as_str()
            ));
        }
        let status = JobStatus::from_queue(entry, None, None);
        let label = status.label();
        let phase = entry.state.phase();
        if phase == Phase::Ended {
            // Said once, with the exit code, by `ended`.
            return;
        }
        if phase == Phase::Pending && self.printer.fancy() && !self.log_started {
            self.spinner.get_or_insert_with(|| {
                let bar = ProgressBar::new_spinner();
                if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
                    bar.set_style(style);
                }
                bar.enable_steady_tick(Duration::from_millis(120));
                bar
            });
            self.last_label = Some(label);
            self.tick();
            return;
        }
        if self.last_label.as_ref() == Some(&label) {
            return;
        }
        self.last_label = Some(label.clone());
        let text = match phase {
            Phase::Pending => format!("{} is {label}, waiting {}", self.job(), self.waited()),
            Phase::Running if !self.running_since_shown => {
                self.running_since_shown = true;
                match &entry.nodelist {
                    Some(nodes) => format!("{} is {label} on {nodes}", self.job()),
                    None => format!("{} is {label}", self.job()),
                }
            }
            _ => format!("{} is {label}", self.job()),
        };
        self.clear();
        self.line(&text);
    }

    /// Keeps the spinner's waiting time current.
    pub(super) fn tick(&self) {
        if let (Some(spinner), Some(label)) = (&self.spinner, &self.last_label) {
            spinner.set_message(format!("{} {label}, waiting {}", self.job(), self.waited()));
        }
    }

    pub(super) fn squeue_failing(&mut self, error: &str, retry_in: Duration) {
        if !self.squeue_failing {
            self.squeue_failing = true;
            self.clear();
            self.printer.warn(&format!(
                "{error}\n  the state of {} is unknown until squeue answers; asking again in {} s",
                self.job(),
                retry_in.as_secs()
            ));
        }
    }

    pub(super) fn log_started(&mut self) {
        self.log_started = true;
        self.clear();
    }

    pub(super) fn log_event(&mut self, event: TailEvent, path: &std::path::Path) {
        self.clear();
        let path = path.display();
        match event {
            TailEvent::Deleted => self.printer.warn(&format!(
                "the log `{path}` was deleted; still following the state of {}",
                self.job()
            )),
            TailEvent::Truncated => self.line(&format!(
                "the log `{path}` was truncated; reading it from its start"
            )),
            TailEvent::Replaced => self.line(&format!(
                "the log `{path}` was replaced; reading the new one from its start"
            )),
            TailEvent::Reappeared => self.line(&format!(
                "the log `{path}` is back; reading it from its start"
            )),
        }
    }

    pub(super) fn ended(&mut self, status: &JobStatus) {
        self.clear();
        let mut text = format!("{} {}", self.job(), status.state);
        match status.exit_code {
            Some(code) => text.push_str(&format!(", exit code {code}")),
            None => text.push_str(", exit code unknown"),
        }
        if let Some(secs) = status.elapsed {
            text.push_str(&format!(", ran {}", duration::format(secs)));
        }
        if let Some(message) = &status.message {
            text.push_str(&format!(": {message}"));
        }
        self.line(&text);
    }

    pub(super) fn line(&self, text: &str) {
        self.printer.info(&format!("rayslurm: {text}"));
    }

    pub(super) fn clear(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.finish_and_clear();
        }
    }
}
