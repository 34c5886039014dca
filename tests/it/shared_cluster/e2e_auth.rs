//! End-to-end: every Ray cluster rayslurm starts requires the run's token. A client without it
//! is refused on every port that takes clients (the GCS, Ray Client's server, the dashboard and
//! each node's dashboard agent) while the job's own command connects as usual; the token is in
//! the run's private directory, never in the script or the log.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::harness::lab;
use crate::harness::{assert_clean, launch};

/// Runs inside the job: connects as the command does, then tries every port as an outsider, and
/// the same with the run's token (the control: each port takes clients, and the token is what
/// the outsider lacks).
const PROBE: &str = r#"
import os, subprocess, sys, urllib.request, urllib.error
import ray

ray.init()
print("own-driver-connected", int(ray.cluster_resources()["CPU"]))
gcs_ip, gcs_port = os.environ["RAY_ADDRESS"].rsplit(":", 1)
token = open(os.environ["RAY_AUTH_TOKEN_PATH"]).read().strip()
# The --port-base layout: GCS, dashboard, client server, ... (src/bootstrap/ports.rs).
dashboard, client = int(gcs_port) + 1, int(gcs_port) + 2
agents = [(n["NodeManagerAddress"], n["MetricsExportPort"] + 1) for n in ray.nodes() if n["Alive"]]

def status(url, with_token):
    req = urllib.request.Request(url)
    if with_token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        return urllib.request.urlopen(req, timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code

for name, url in [("dashboard", f"http://127.0.0.1:{dashboard}/api/version")] + [
    (f"agent-{ip}", f"http://{ip}:{port}/api/jobs/") for ip, port in agents
]:
    print("http", name, "without", status(url, False), "with", status(url, True))

outsider = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH") and k != "RAY_ADDRESS"}
# The control: the same attach with the run's token (RAY_AUTH_*) connects, so a refusal above
# is the token's, at a port that takes clients.
insider = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
attach = """import ray, sys
try:
    ray.init(address=sys.argv[1])
    print('ATTACHED', int(ray.cluster_resources()['CPU']))
except Exception as e:
    print('REFUSED', type(e).__name__, ' '.join(str(e).split())[:400])
"""
# Ray Client's server starts a server for each client, which can fail to start in time on a
# loaded node: the insider tries up to 3 times (the outsider's one try is refused at once).
for who, env, tries in [("outsider", outsider, 1), ("insider", insider, 3)]:
    for name, address in [("gcs", f"{gcs_ip}:{gcs_port}"), ("client", f"ray://{gcs_ip}:{client}")]:
        for attempt in range(tries):
            r = subprocess.run([sys.executable, "-c", attach, address], env=env,
                               capture_output=True, text=True, timeout=120)
            said = [l for l in r.stdout.splitlines() if l.startswith(("ATTACHED", "REFUSED"))]
            said = said[-1] if said else "nothing " + " ".join(r.stderr.split())[-400:]
            if said.startswith("ATTACHED") or attempt + 1 == tries:
                break
            print("retried", who, name, said, flush=True)
        # The GCS's own word for a missing token, which Ray's client logs as it retries.
        if said.startswith("REFUSED") and "InvalidAuthToken" in r.stderr:
            said += " InvalidAuthToken"
        print(who, name, said, flush=True)

# Ray Client's server, asked directly (a ping, as its client does first): its own refusal of a
# missing token, which `ray.init("ray://...")` only shows as a timeout; with the token, it answers.
import grpc
from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc

def ping(with_token):
    stub = ray_client_pb2_grpc.RayletDriverStub(grpc.insecure_channel(f"{gcs_ip}:{client}"))
    metadata = [("authorization", "Bearer " + token)] if with_token else []
    ping = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
    try:
        stub.ClusterInfo(ping, timeout=10, metadata=metadata)
        return "OK"
    except grpc.RpcError as e:
        return f"{e.code().name} {e.details()}"

print("ping client without", ping(False), flush=True)
print("ping client with", ping(True), flush=True)
"#;

#[test]
fn a_client_without_the_token_is_refused_on_every_port() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("auth");
    std::fs::write(dir.join("probe.py"), PROBE).unwrap();
    // A --port-base layout, so that the probe knows where Ray Client's server is (chosen
    // ports are told to no one but Ray). Below 10000, where no other run's chosen ports are
    // (they are between 10000 and the ephemeral range), nor its outgoing connections' (the
    // ephemeral range, 32768 up), nor what these leave in TIME_WAIT.
    let base = (4_000 + (std::process::id() % 20) * 100).to_string();
    let job = crate::harness::launch_with_dashboard(
        lab,
        &dir,
        "auth",
        &[
            "-n",
            "2",
            "--port-base",
            &base,
            "--command",
            "python probe.py",
        ],
    );
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains("own-driver-connected 4"), "{log}");
    // Checked beside the command, which did not wait for the dashboard.
    assert!(
        log.contains("a request without it is refused"),
        "checked at start-up: {log}"
    );
    let started = log
        .find("running the command")
        .expect("the command started");
    assert!(
        !log[..started].contains("a request without it is refused")
            || log[..started].contains("checked after"),
        "{log}"
    );
    let http: Vec<&str> = log.lines().filter(|l| l.starts_with("http ")).collect();
    assert_eq!(http.len(), 3, "the dashboard and both nodes' agents: {log}");
    for line in &http {
        assert!(
            line.contains("without 401") && !line.contains("with 401"),
            "{line}"
        );
    }
    let said = |start: &str| {
        log.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` line: {log}"))
            .to_owned()
    };
    // Refused for the token's sake: the GCS says so; Ray Client's server, asked directly,
    // answers UNAUTHENTICATED (a port where nothing listens would be UNAVAILABLE).
    let gcs = said("outsider gcs ");
    assert!(
        gcs.starts_with("outsider gcs REFUSED") && gcs.ends_with(" InvalidAuthToken"),
        "{gcs}"
    );
    let client = said("outsider client ");
    assert!(client.starts_with("outsider client REFUSED"), "{client}");
    assert_eq!(
        said("ping client without "),
        "ping client without UNAUTHENTICATED Invalid or missing authentication token",
        "{log}"
    );
    // The controls: the same clients with the run's token connect there.
    for name in ["gcs", "client"] {
        let insider = said(&format!("insider {name} "));
        assert_eq!(insider, format!("insider {name} ATTACHED 4"), "{log}");
    }
    assert_eq!(said("ping client with "), "ping client with OK", "{log}");
    // The token: in the run's private directory, owner-only, and nowhere else.
    let run_dir = job.log.with_extension("d");
    // The first attempt's own token.
    let token_file = run_dir.join(format!("ray-auth-token-{}.0", job.id));
    let token = std::fs::read_to_string(&token_file).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&run_dir), mode(&token_file)), (0o700, 0o600));
    assert!(!log.contains(token.trim()), "the token is not in the log");
    let script = std::fs::read_to_string(job.log.with_extension("sh")).unwrap();
    assert!(!script.contains(token.trim()), "nor in the script");
    assert_clean(&job);
}

#[test]
fn no_ray_auth_runs_an_open_cluster_on_purpose() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let cmd =
        "python -c 'import os, ray; ray.init(); print(\"mode\", os.environ[\"RAY_AUTH_MODE\"])'";
    let job = launch(lab, "noauth", &["--no-ray-auth", "--command", cmd]);
    let info = job.wait(Duration::from_secs(300));
    let log = job.log_text();
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains("mode disabled"), "{log}");
    // The run has its private directory (for checkpoints), but no token in it.
    let tokens: Vec<_> = std::fs::read_dir(job.log.with_extension("d"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("ray-auth-token")
        })
        .collect();
    assert!(tokens.is_empty(), "no token made: {tokens:?}");
    assert_clean(&job);
}
