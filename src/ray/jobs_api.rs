//! A small client of Ray's Jobs API (the REST API on the head's dashboard port), used by the
//! login node to run jobs on a persistent cluster and by the head itself (autostop, stopping
//! jobs at the end of the allocation). Every call carries the run's token, and the token goes
//! only to an address of this host whose port no other user listens on, on any of the host's
//! addresses (checked before every call: anyone with a shell on the node may bind a port of
//! the run first). A head on another host cannot be checked from here, so the token is never
//! sent there: the login node reaches it through the allocation (`clusters::relay`), whose
//! step makes the same check on the head.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::sys::socket_owner;

/// Where the API is and the token it wants.
#[derive(Debug, Clone)]
pub(crate) struct JobsApi {
    base: String,
    /// The address, where it is one (`host:port` with an IP), to check the listener of: a call
    /// with the token goes only to an address of this host.
    to: Option<SocketAddr>,
    token: Option<String>,
    agent: ureq::Agent,
}

/// What `POST /api/jobs/` takes.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Submit {
    pub(crate) entrypoint: String,
    pub(crate) submission_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) entrypoint_num_cpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) entrypoint_num_gpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) entrypoint_memory: Option<u64>,
    pub(crate) runtime_env: RuntimeEnv,
    pub(crate) metadata: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct RuntimeEnv {
    pub(crate) env_vars: BTreeMap<String, String>,
}

/// A job as `GET /api/jobs/{id}` describes it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub(crate) struct JobInfo {
    pub(crate) submission_id: Option<String>,
    /// PENDING, RUNNING, STOPPED, SUCCEEDED or FAILED.
    pub(crate) status: String,
    #[serde(default)]
    pub(crate) message: Option<String>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub(crate) start_time: Option<u64>,
    #[serde(default)]
    pub(crate) end_time: Option<u64>,
    #[serde(default)]
    pub(crate) driver_exit_code: Option<i32>,
    #[serde(default)]
    pub(crate) metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub(crate) entrypoint: Option<String>,
}

impl JobInfo {
    /// Whether the job has ended (Ray's final states).
    pub(crate) fn ended(&self) -> bool {
        matches!(self.status.as_str(), "STOPPED" | "SUCCEEDED" | "FAILED")
    }

    /// Whether the job holds or waits for the cluster's resources.
    pub(crate) fn active(&self) -> bool {
        matches!(self.status.as_str(), "PENDING" | "RUNNING")
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    #[error("Ray's Jobs API at {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("cannot reach Ray's Jobs API at {url}: {message}")]
    Unreachable { url: String, message: String },
    /// Another user listens on the port: nothing was sent.
    #[error("{0}")]
    NotYours(socket_owner::PortCheck),
    /// The address is not this host's, so who listens there cannot be seen: the token was
    /// not sent.
    #[error(
        "the token of the run goes only to a port whose listener rayslurm has checked, and {url} is not on this host: reach the head through the allocation (`--via-allocation`, or unset RAYSLURM_RELAY=never)"
    )]
    Unchecked { url: String },
}

impl ApiError {
    /// Whether Ray refused the submission `submission_id` because it has a job under that id
    /// already: its job agent's `Job with submission_id ... already exists`, which the
    /// dashboard passes on inside an HTTP 500's traceback (an agent's own answer is a 400).
    pub(crate) fn is_id_taken(&self, submission_id: &str) -> bool {
        let said = format!("Job with submission_id {submission_id} already exists");
        matches!(self, Self::Status { status: 400 | 500, body, .. } if body.contains(&said))
    }
}

impl JobsApi {
    /// The API on `host:port`, with the token read from `token_file` (if any).
    pub(crate) fn new(host_port: &str, token_file: Option<&Path>) -> std::io::Result<Self> {
        let token = token_file
            .map(std::fs::read_to_string)
            .transpose()?
            .map(|t| t.trim().to_owned());
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Self {
            base: format!("http://{host_port}"),
            to: host_port.parse().ok(),
            token,
            agent,
        })
    }

    /// Whether this call may go: to a port of this host that no other user holds; to another
    /// host only without a token (an open cluster, which anyone may use anyway).
    fn guard(&self, url: &str) -> Result<(), ApiError> {
        match self.to {
            Some(to) if socket_owner::is_local_address(to.ip()) => {
                socket_owner::ensure_port_is_ours(to.port()).map_err(ApiError::NotYours)
            }
            _ if self.token.is_none() => Ok(()),
            _ => Err(ApiError::Unchecked {
                url: url.to_owned(),
            }),
        }
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<String, ApiError> {
        let url = format!("{}{path}", self.base);
        self.guard(&url)?;
        if crate::sys::process::echoing() {
            // As `-v` shows commands: one line a request (the token never).
            eprintln!("# Ray's Jobs API: {method} {url}");
        }
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let result = match (method, body) {
            ("GET", _) => {
                let mut req = self.agent.get(&url);
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.call()
            }
            (_, body) => {
                let mut req = self.agent.post(&url);
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                match body {
                    Some(b) => req.send_json(b),
                    None => req.send_empty(),
                }
            }
        };
        let mut response = result.map_err(|e| ApiError::Unreachable {
            url: url.clone(),
            message: e.to_string(),
        })?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| ApiError::Unreachable {
                url: url.clone(),
                message: e.to_string(),
            })?;
        if (200..300).contains(&status) {
            Ok(text)
        } else {
            Err(ApiError::Status {
                url,
                status,
                body: what_went_wrong(&text),
            })
        }
    }

    fn parse<T: serde::de::DeserializeOwned>(&self, text: &str, path: &str) -> Result<T, ApiError> {
        serde_json::from_str(text).map_err(|e| ApiError::Unreachable {
            url: format!("{}{path}", self.base),
            message: format!(
                "unexpected answer ({e}): {}",
                text.chars().take(200).collect::<String>()
            ),
        })
    }

    /// Submits a job; returns its submission id.
    pub(crate) fn submit(&self, job: &Submit) -> Result<String, ApiError> {
        let body = serde_json::to_value(job).expect("a job serializes");
        let text = self.call("POST", "/api/jobs/", Some(&body))?;
        #[derive(Deserialize)]
        struct Submitted {
            submission_id: String,
        }
        Ok(self.parse::<Submitted>(&text, "/api/jobs/")?.submission_id)
    }

    pub(crate) fn job(&self, submission_id: &str) -> Result<JobInfo, ApiError> {
        let path = format!("/api/jobs/{submission_id}");
        let text = self.call("GET", &path, None)?;
        self.parse(&text, &path)
    }

    /// Every job the cluster knows.
    pub(crate) fn jobs(&self) -> Result<Vec<JobInfo>, ApiError> {
        let text = self.call("GET", "/api/jobs/", None)?;
        self.parse(&text, "/api/jobs/")
    }

    /// Asks Ray to stop a job (SIGTERM, then SIGKILL after `RAY_JOB_STOP_WAIT_TIME_S`).
    pub(crate) fn stop(&self, submission_id: &str) -> Result<(), ApiError> {
        self.call("POST", &format!("/api/jobs/{submission_id}/stop"), None)
            .map(|_| ())
    }

    /// Whether any job is running or pending.
    pub(crate) fn any_active(&self) -> Result<bool, ApiError> {
        Ok(self.jobs()?.iter().any(JobInfo::active))
    }

    /// Asks Ray to stop every running and pending job, then waits, at most `limit`, for the
    /// ones that were running to end (a pending job has no process: it ends with the cluster,
    /// and Ray would only stop it once it had started). One list of the jobs, a request a job
    /// to stop it, then a request a poll for each job still running: never the whole list
    /// again, whose length is the queue's.
    pub(crate) fn stop_all(&self, limit: Duration) -> Result<StoppedJobs, ApiError> {
        let jobs = self.jobs()?;
        let active: Vec<&JobInfo> = jobs.iter().filter(|j| j.active()).collect();
        for id in active.iter().filter_map(|j| j.submission_id.as_deref()) {
            self.stop(id)?;
        }
        let mut running: Vec<&str> = (active.iter())
            .filter(|j| j.status == "RUNNING")
            .filter_map(|j| j.submission_id.as_deref())
            .collect();
        let stopped = StoppedJobs {
            active: active.len(),
            running: running.len(),
        };
        let deadline = Instant::now() + limit;
        while !running.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(500));
            let mut still = Vec::new();
            for id in running {
                if self.job(id)?.status == "RUNNING" {
                    still.push(id);
                }
            }
            running = still;
        }
        Ok(stopped)
    }
}

/// What [`JobsApi::stop_all`] asked Ray to stop: the running and pending jobs, and of them the
/// running ones, waited for.
pub(crate) struct StoppedJobs {
    pub(crate) active: usize,
    pub(crate) running: usize,
}

/// What an error answer says, in 300 characters at most: a Python traceback's last exception
/// line (`ValueError: ...`: Ray's dashboard ends its own traceback with its job agent's), else
/// the answer's start.
fn what_went_wrong(text: &str) -> String {
    let text = text.trim();
    let exception = |line: &&str| {
        line.split_once(": ").is_some_and(|(name, _)| {
            (name.ends_with("Error") || name.ends_with("Exception"))
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '.' || c == '_')
        })
    };
    let said = if text.starts_with("Traceback") {
        text.lines().rev().find(exception).unwrap_or(text)
    } else {
        text
    };
    said.trim().chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_answer_is_its_traceback_last_line_or_its_start() {
        // As Ray 2.60's dashboard passes on its job agent's refusal (an HTTP 500).
        let agent = "Traceback (most recent call last):\n  File \"job_agent.py\", line 48, in submit_job\n    raise ValueError(...)\nValueError: Job with submission_id rayslurm-7-3 already exists. Please use a different submission_id.";
        let head = format!(
            "Traceback (most recent call last):\n  File \"job_head.py\", line 419, in submit_job\n    resp = await job_agent_client.submit_job_internal(submit_request)\nRuntimeError: Request failed with status code 400: {agent}\n.\n"
        );
        let said = what_went_wrong(&head);
        assert!(
            said.starts_with("ValueError: Job with submission_id rayslurm-7-3 already exists"),
            "{said}"
        );
        let refused = ApiError::Status {
            url: "u".into(),
            status: 500,
            body: said,
        };
        assert!(refused.is_id_taken("rayslurm-7-3"));
        assert!(
            !refused.is_id_taken("rayslurm-7-30"),
            "another id's refusal"
        );
        assert_eq!(what_went_wrong("  no such job\n"), "no such job");
        assert_eq!(what_went_wrong(&"x".repeat(1000)).len(), 300);
    }

    #[test]
    fn a_job_serializes_as_the_api_takes_it() {
        let mut env = BTreeMap::new();
        env.insert("LR".to_owned(), "0.1".to_owned());
        let job = Submit {
            entrypoint: "python t.py".into(),
            submission_id: "rs-c-1".into(),
            entrypoint_num_cpus: Some(2.0),
            runtime_env: RuntimeEnv { env_vars: env },
            ..Submit::default()
        };
        let v = serde_json::to_value(&job).unwrap();
        assert_eq!(v["entrypoint_num_cpus"], 2.0);
        assert_eq!(v["runtime_env"]["env_vars"]["LR"], "0.1");
        assert!(v.get("entrypoint_num_gpus").is_none());
    }

    #[test]
    fn a_squatter_on_the_port_is_never_sent_the_token() {
        let Some(squatter) = socket_owner::squatter::Squatter::start() else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let token = tmp.path().join("token");
        std::fs::write(&token, "secret-token-value").unwrap();
        let port = squatter.port;
        let api = JobsApi::new(&format!("127.0.0.1:{port}"), Some(&token)).unwrap();
        let err = api.jobs().unwrap_err();
        assert!(matches!(err, ApiError::NotYours(_)), "{err}");
        let message = err.to_string();
        assert!(
            message.contains(&format!("port {port}")) && message.contains("user id 65534"),
            "{message}"
        );
        assert_eq!(squatter.seen(), "", "nothing was sent");
        // The control: the same server of this process's own user is sent the token.
        let own = socket_owner::squatter::Squatter::own().unwrap();
        let api = JobsApi::new(&format!("127.0.0.1:{}", own.port), Some(&token)).unwrap();
        let _ = api.jobs();
        let seen = own.seen();
        assert!(seen.contains("AUTH Bearer secret-token-value"), "{seen}");
    }

    #[test]
    fn states() {
        let info: JobInfo = serde_json::from_str(
            r#"{"submission_id": "x", "status": "FAILED", "driver_exit_code": 3, "type": "SUBMISSION"}"#,
        )
        .unwrap();
        assert!(info.ended() && !info.active());
        assert_eq!(info.driver_exit_code, Some(3));
    }
}
