//! `scontrol show job`: a job's exit code, run time, nodes and restarts, while slurmctld
//! knows the job (and the node that runs its batch script); `scontrol show config`: the cluster's name.

use std::collections::HashMap;

use super::client::{QueryError, is_unknown_job, slurm_client};
use super::fields::known;
use super::job_state::{SlurmExit, SlurmState};
use crate::slurm::duration;
use crate::sys::process::Cmd;

/// The fields of `scontrol show job -o ID` we use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScontrolJob {
    /// The job's own id (`JobId=`): for an array's task `42_3`, the id Slurm gave that task
    /// (its `SLURM_JOB_ID` inside).
    pub(crate) own_id: Option<String>,
    pub(crate) state: SlurmState,
    pub(crate) exit: Option<SlurmExit>,
    pub(crate) elapsed: Option<u64>,
    pub(crate) nodelist: Option<String>,
    /// How many times Slurm has requeued it (`Restarts=`): it counts a requeue as soon as the
    /// job is being stopped for it, while the job still runs.
    pub(crate) restarts: Option<u32>,
    /// The node that runs the batch script (`BatchHost=`): a run's head, rank 0 of a per-node
    /// run; `None` before the job has one.
    pub(crate) batch_host: Option<String>,
}

/// Splits `scontrol show job -o` output into `Key=Value` fields. A value may hold spaces
/// (`Command=/x/run.sh a b`): words without `=` belong to the value before them.
pub(crate) fn parse_scontrol_fields(text: &str) -> HashMap<String, String> {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut fields: HashMap<String, String> = HashMap::new();
    let mut last: Option<String> = None;
    for word in line.split_whitespace() {
        match word.split_once('=') {
            Some((key, value))
                if !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "/:_-".contains(c)) =>
            {
                fields.insert(key.to_owned(), value.to_owned());
                last = Some(key.to_owned());
            }
            _ => {
                if let Some(value) = last.as_ref().and_then(|k| fields.get_mut(k)) {
                    value.push(' ');
                    value.push_str(word);
                }
            }
        }
    }
    fields
}

pub(crate) fn parse_scontrol_job(text: &str) -> Option<ScontrolJob> {
    let fields = parse_scontrol_fields(text);
    let state = fields.get("JobState")?;
    Some(ScontrolJob {
        own_id: fields.get("JobId").cloned(),
        state: SlurmState::new(state),
        exit: fields.get("ExitCode").and_then(|e| SlurmExit::parse(e)),
        elapsed: fields.get("RunTime").and_then(|t| duration::parse(t)),
        nodelist: fields.get("NodeList").and_then(|n| known(n)),
        restarts: fields.get("Restarts").and_then(|r| r.parse().ok()),
        batch_host: fields.get("BatchHost").and_then(|h| known(h)),
    })
}

/// `scontrol show job -o ID`; `Ok(None)` once slurmctld has forgotten the job.
pub(crate) fn scontrol_job(job_id: &str) -> Result<Option<ScontrolJob>, QueryError> {
    let cmd = Cmd::new("scontrol").args(["show", "job", "-o", job_id]);
    match cmd.stdout() {
        Ok(out) => Ok(parse_scontrol_job(&out)),
        Err(e) if is_unknown_job(&e) => Ok(None),
        Err(e) => Err(QueryError::from_cmd(e)),
    }
}

/// This cluster's `ClusterName`, from `scontrol show config` (empty where it names none).
pub(crate) fn cluster_name() -> Result<String, QueryError> {
    let out = slurm_client("scontrol")
        .args(["show", "config"])
        .stdout()
        .map_err(QueryError::from_cmd)?;
    Ok(parse_cluster_name(&out).unwrap_or_default())
}

/// `ClusterName` from `scontrol show config`'s `ClusterName = NAME` line.
fn parse_cluster_name(out: &str) -> Option<String> {
    out.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "ClusterName").then(|| value.trim().to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_name_is_read_from_scontrol_show_config() {
        let out = "Configuration data as of 2026-11-27T04:00:00\nAccountingStorageBackupHost = (null)\nClusterName             = rayslurmlab\nCompleteWait = 0 sec\n";
        assert_eq!(parse_cluster_name(out).as_deref(), Some("rayslurmlab"));
        assert_eq!(parse_cluster_name("nothing here\n"), None);
    }

    #[test]
    fn scontrol_one_line() {
        let text = "JobId=11 JobName=a.sh UserId=root(0) JobState=FAILED Reason=NonZeroExitCode \
            Dependency=(null) ExitCode=3:0 RunTime=00:00:03 TimeLimit=UNLIMITED NodeList=node1 \
            BatchHost=node1 Command=/srv/my dir/a.sh --flag x=1 WorkDir=/srv/my dir Power= \n";
        let job = parse_scontrol_job(text).unwrap();
        assert_eq!(job.own_id.as_deref(), Some("11"));
        // An array's task: its own id, beside the array's.
        let task = parse_scontrol_job("JobId=413 ArrayJobId=412 ArrayTaskId=0 JobState=RUNNING \n");
        assert_eq!(task.unwrap().own_id.as_deref(), Some("413"));
        assert_eq!(job.state.as_str(), "FAILED");
        assert_eq!(job.exit, Some(SlurmExit { code: 3, signal: 0 }));
        assert_eq!(job.elapsed, Some(3));
        assert_eq!(job.nodelist.as_deref(), Some("node1"));
        assert_eq!(job.restarts, None);
        assert_eq!(job.batch_host.as_deref(), Some("node1"));
        let requeued = parse_scontrol_job("JobId=1 JobState=COMPLETING Requeue=1 Restarts=2 \n");
        assert_eq!(requeued.unwrap().restarts, Some(2));
        let fields = parse_scontrol_fields(text);
        assert_eq!(fields["WorkDir"], "/srv/my dir");
        assert_eq!(fields["Power"], "");
        assert_eq!(fields["Command"], "/srv/my dir/a.sh --flag");
        assert_eq!(fields["x"], "1");
        assert_eq!(parse_scontrol_job(""), None);
    }
}
