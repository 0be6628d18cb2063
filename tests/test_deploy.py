"""deploy/: promtool checks, metric-name cross-checks, manifests against the daemon's flags, and a real
Prometheus server evaluating the alert rules against a served DaemonMetrics registry.

promtool and prometheus come from Debian's ``prometheus`` package (``.ci/run`` installs it). In CI
(``CI`` set) a missing binary fails the tests; elsewhere they skip, saying how to install it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from prometheus_server import INSTALL_HINT, PrometheusServer, free_port, prometheus_binary
from robustream.cli import build_parser
from robustream.daemon.config import ENV_PREFIX, SERVE_OPTIONS, resolve
from robustream.daemon.metrics import METRIC_NAMES, OUTCOMES, DaemonMetrics

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
ALERTS_TEST = DEPLOY / "prometheus" / "alerts_test.yml"
PROM_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "robustream.json"
COMPOSE = DEPLOY / "docker-compose.yml"
DOCKERFILE = DEPLOY / "Dockerfile"
K8S = DEPLOY / "k8s"

HISTOGRAMS = {"robustream_rebuild_duration_seconds", "robustream_process_duration_seconds",
              "robustream_checkpoint_duration_seconds"}  # fmt: skip
KNOWN_ENV = {ENV_PREFIX + flag.replace("-", "_").upper() for flag, *_ in SERVE_OPTIONS} | {ENV_PREFIX + "CONFIG"}
NAME_RE = re.compile(r"\brobustream_[a-z_]+\b")


def _missing_tool(name: str) -> None:
    hint = INSTALL_HINT if name == "prometheus" else "install it with: apt-get install prometheus (Debian)"
    msg = f"{name} not found; {hint}"
    if os.environ.get("CI"):
        pytest.fail(msg + " (.ci/run installs it)")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        _missing_tool("promtool")
    return path


def run_promtool(promtool: str, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([promtool, *args], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, f"promtool {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text())


def alert_rules() -> list[dict]:
    return [r for g in load_yaml(ALERTS)["groups"] for r in g["rules"] if "alert" in r]


# ---- promtool ----------------------------------------------------------------------------------------
def test_promtool_check_config(promtool):
    out = run_promtool(promtool, "check", "config", str(PROM_CONFIG))
    assert "SUCCESS" in out.stdout + out.stderr


def test_promtool_check_rules(promtool, tmp_path):
    run_promtool(promtool, "check", "rules", str(ALERTS))
    # the Prometheus Operator copy, as a plain rules file
    rule = load_yaml(K8S / "prometheusrule.yaml")
    copy = tmp_path / "operator-rules.yml"
    copy.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    run_promtool(promtool, "check", "rules", str(copy))


def test_promtool_test_rules(promtool):
    out = run_promtool(promtool, "test", "rules", str(ALERTS_TEST))
    assert "SUCCESS" in out.stdout and "FAILED" not in out.stdout


def test_every_alert_has_firing_and_quiet_unit_tests():
    names = {r["alert"] for r in alert_rules()}
    firing, quiet = set(), set()
    for case in load_yaml(ALERTS_TEST)["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert names - firing == set(), "alerts never fired by a promtool unit test"
    assert names - quiet == set(), "alerts without a non-firing promtool unit test"
    assert firing | quiet <= names, "unit tests name unknown alerts"


def test_alerts_have_severity_summary_and_for():
    for rule in alert_rules():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
        assert "for" in rule, rule["alert"]


def test_operator_rule_matches_alerts_file():
    assert load_yaml(K8S / "prometheusrule.yaml")["spec"]["groups"] == load_yaml(ALERTS)["groups"]


def test_prometheus_rule_files_exist():
    config = load_yaml(PROM_CONFIG)
    for name in config["rule_files"]:
        assert (PROM_CONFIG.parent / name).is_file(), name


# ---- metric names ---------------------------------------------------------------------------------------
def base_name(name: str) -> str:
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in HISTOGRAMS:
            return name[: -len(suffix)]
    return name


def names_in(exprs) -> set[str]:
    return {base_name(n) for e in exprs for n in NAME_RE.findall(e)}


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for var in dash["templating"]["list"]:
        q = var.get("query")
        if isinstance(q, dict):
            exprs.append(q["query"])
    return exprs


def alert_exprs() -> list[str]:
    return [r["expr"] for r in alert_rules()]


def test_metric_names_list_matches_the_registry():
    m = DaemonMetrics()
    m.consumer_lag.labels(partition="0").set(1)
    text = m.exposition().decode()
    exported = {base_name(line.split("{")[0].split(" ")[0]) for line in text.splitlines() if line[:1] not in ("#", "")}
    assert {n for n in exported if n.startswith("robustream_")} == set(METRIC_NAMES)
    # and the process's own, as prometheus_client's default registry has them
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "python_gc_collections_total"} <= exported
    assert HISTOGRAMS <= set(METRIC_NAMES)


def test_alert_rules_use_only_exported_metrics():
    used = names_in(alert_exprs())
    assert used - set(METRIC_NAMES) == set()
    assert used, "no robustream metric found in the alert rules"


def test_dashboard_uses_only_exported_metrics_and_shows_all():
    used = names_in(dashboard_exprs())
    assert used - set(METRIC_NAMES) == set(), "dashboard uses unknown metrics"
    assert set(METRIC_NAMES) - used == set(), "metrics missing from the dashboard"


def test_outcome_label_values_exist():
    for expr in alert_exprs() + dashboard_exprs():
        for matcher in re.findall(r'outcome\s*=~?\s*"([^"]*)"', expr):
            for value in matcher.split("|"):  # =~ "invalid|dead_letter"
                assert value in OUTCOMES, (value, expr)


def test_dashboard_structure():
    dash = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    titles = [p["title"] for p in dash["panels"]]
    assert len(titles) == len(set(titles))
    for p in dash["panels"]:
        assert set(p["gridPos"]) == {"h", "w", "x", "y"} and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24, p["title"]
        if p["type"] != "row":
            assert p["targets"] and p["datasource"]["uid"] == "${datasource}", p["title"]
    wanted = ["margin width", "outlier rate", "prequential accuracy", "by outcome", "lag per partition",
              "processing latency", "rebuild duration", "checkpoint"]  # fmt: skip
    lowered = " | ".join(t.lower() for t in titles)
    for w in wanted:
        assert w in lowered, w
    assert any("histogram_quantile" in e for e in dashboard_exprs())
    # "All" of a filter means its values (robustream's jobs and replicas): an allValue of ".*" also
    # matched Prometheus's own target, so "targets up" read one more than the replicas
    for var in dash["templating"]["list"]:
        if var.get("includeAll"):
            assert "allValue" not in var, var["name"]
    # provisioning: the datasource uid and the dashboards folder agree with the compose mounts
    ds = load_yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")["datasources"][0]
    assert ds["type"] == "prometheus" and ds["url"] == "http://prometheus:9090"
    ds_var = next(v for v in dash["templating"]["list"] if v["type"] == "datasource")
    assert ds_var["current"]["value"] == ds["uid"]
    provider = load_yaml(DEPLOY / "grafana" / "provisioning" / "dashboards" / "robustream.yml")["providers"][0]
    targets = compose_mounts("grafana")
    assert provider["options"]["path"] in targets.values()
    assert targets[DASHBOARD.parent.resolve()] == provider["options"]["path"]


# ---- compose ------------------------------------------------------------------------------------------
def compose() -> dict:
    return load_yaml(COMPOSE)


def interpolate(text: str) -> str:
    """Compose's ${VAR:-default} with the variables unset; $$ -> $."""
    text = re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}", r"\1", text)
    return text.replace("$$", "$")


def compose_mounts(service: str) -> dict[Path, str]:
    """Bind mounts of a service: resolved host path -> container path."""
    out = {}
    for vol in compose()["services"][service].get("volumes", []):
        src, dst = vol.split(":")[:2]
        if src.startswith((".", "/")):
            out[(COMPOSE.parent / src).resolve()] = dst
    return out


def test_compose_services_and_files_exist():
    services = compose()["services"]
    assert {"broker", "robustream", "producer", "prometheus", "grafana"} <= set(services)
    for name, svc in services.items():
        build = svc.get("build")
        if build:
            context = (COMPOSE.parent / build["context"]).resolve()
            assert context.is_dir(), name
            assert (context / build.get("dockerfile", "Dockerfile")).resolve() == DOCKERFILE, name
        for host in compose_mounts(name):
            assert host.exists(), f"{name}: mounted {host} does not exist"


def test_compose_kafka_is_single_node_kraft():
    broker = compose()["services"]["broker"]
    assert broker["image"].startswith("apache/kafka:")
    env = broker["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{env['KAFKA_NODE_ID']}@broker:")
    assert "PLAINTEXT://broker:19092" in env["KAFKA_ADVERTISED_LISTENERS"]
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == 1


def test_compose_daemon_is_scalable_and_agrees_with_serve_flags(tmp_path):
    services = compose()["services"]
    svc = services["robustream"]
    assert "container_name" not in svc and "ports" not in svc, "a fixed name or host port breaks --scale"
    env = {k: str(v) for k, v in svc["environment"].items()}
    assert set(k for k in env if k.startswith(ENV_PREFIX)) <= KNOWN_ENV
    argv = [interpolate(a) for a in svc["command"]]
    mounts = {dst: host for host, dst in compose_mounts("robustream").items()}
    argv = [str(mounts.get(a, a)) for a in argv]  # the container's config path -> the repo file
    cfg = resolve(build_parser().parse_args(["serve", *argv]), env)
    assert cfg.metrics_host == "0.0.0.0"
    assert cfg.bootstrap_servers == "broker:19092"
    assert str(cfg.metrics_port) in [str(p) for p in svc["expose"]]
    scrape = next(j for j in load_yaml(PROM_CONFIG)["scrape_configs"] if j["job_name"] == "robustream")
    sd = scrape["dns_sd_configs"][0]
    assert sd["names"] == ["robustream"] and sd["port"] == int(cfg.metrics_port)
    assert "static_configs" not in scrape, "scaled replicas need DNS service discovery"
    grace = float(svc["stop_grace_period"].rstrip("s"))
    assert grace > cfg.shutdown_timeout
    # topics created by the one-shot service are the ones the daemon uses
    topics_cmd = interpolate(" ".join(services["topics"]["command"]))
    for topic in (cfg.input_topic, cfg.predictions_topic, cfg.dead_letter_topic):
        assert topic in topics_cmd


def test_compose_producer_matches_example_script():
    svc = compose()["services"]["producer"]
    assert svc["profiles"] == ["demo"]
    entry = svc["entrypoint"]
    assert entry[0] == "python" and entry[1].startswith("/opt/robustream/examples/")
    script = REPO / "examples" / entry[1].rsplit("/", 1)[1]
    assert script.is_file(), f"{script} missing (the compose demo producer runs it)"
    argv = [interpolate(a) for a in svc["command"]]
    flags = {a for a in argv if a.startswith("--")}
    assert {"--bootstrap-servers", "--topic", "--dataset", "--flip"} <= flags
    daemon = resolve(build_parser().parse_args(["serve", "--config", str(DEPLOY / "robustream.toml")]), {})
    assert argv[argv.index("--topic") + 1] == daemon.input_topic
    proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for flag in flags:
        assert flag in proc.stdout, f"{script.name} has no {flag}"


# ---- Dockerfile ---------------------------------------------------------------------------------------
def dockerfile_instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


def dockerfile_env() -> dict[str, str]:
    env = {}
    for op, rest in dockerfile_instructions():
        if op == "ENV":
            for item in shlex.split(rest):
                k, _, v = item.partition("=")
                env[k] = v
    return env


def test_dockerfile():
    ins = dockerfile_instructions()
    ops = [op for op, _ in ins]
    assert ops.count("FROM") >= 2, "multi-stage"
    assert all("slim" in rest or "${PYTHON_IMAGE}" in rest for op, rest in ins if op == "FROM")
    arg = next(rest for op, rest in ins if op == "ARG" and rest.startswith("PYTHON_IMAGE="))
    assert "slim" in arg
    user = [rest for op, rest in ins if op == "USER"]
    assert user and user[-1].split(":")[0] not in ("root", "0")
    assert json.loads(next(rest for op, rest in ins if op == "ENTRYPOINT")) == ["robustream", "serve"]
    env = dockerfile_env()
    numba_dir = env["NUMBA_CACHE_DIR"]
    run_text = " ".join(rest for op, rest in ins if op == "RUN")
    assert f"mkdir -p" in run_text and numba_dir in run_text and "chown" in run_text
    assert set(k for k in env if k.startswith(ENV_PREFIX)) <= KNOWN_ENV
    cfg = resolve(build_parser().parse_args(["serve"]), {k: v for k, v in env.items() if k.startswith(ENV_PREFIX)})
    assert cfg.metrics_host == "0.0.0.0" and cfg.checkpoint_dir in run_text
    expose = [rest for op, rest in ins if op == "EXPOSE"]
    assert expose == [str(cfg.metrics_port)]
    # COPY sources exist in the build context (the repository root)
    for op, rest in ins:
        if op == "COPY" and not rest.startswith("--from"):
            *sources, _ = shlex.split(rest)
            for src in sources:
                assert (REPO / src).exists(), src
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text()
    assert ".venv" in ignore and ".git" in ignore


def healthcheck_argv() -> list[str]:
    rest = next(rest for op, rest in dockerfile_instructions() if op == "HEALTHCHECK")
    return json.loads(rest[rest.index("CMD") + 3:].strip())


def test_dockerfile_healthcheck_probes_metrics_endpoint():
    from prometheus_client import start_http_server

    argv = healthcheck_argv()
    assert argv[0] == "python" and "urllib" in argv[2] and "/metrics" in argv[2]
    argv = [sys.executable, *argv[1:]]
    m = DaemonMetrics()
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=m.registry)
    try:
        ok = subprocess.run(argv, env={**os.environ, "ROBUSTREAM_METRICS_PORT": str(port)}, timeout=30)
        assert ok.returncode == 0
    finally:
        server.shutdown()
        server.server_close()
    down = subprocess.run(argv, env={**os.environ, "ROBUSTREAM_METRICS_PORT": str(port)}, timeout=30,
                          capture_output=True)  # fmt: skip
    assert down.returncode != 0


# ---- Kubernetes -----------------------------------------------------------------------------------------
def k8s_docs() -> dict[str, dict]:
    docs = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs[doc["kind"]] = doc
    return docs


def test_k8s_manifests_parse_and_kustomization_lists_them():
    docs = k8s_docs()
    assert {"Deployment", "ConfigMap", "Service", "PodMonitor", "PrometheusRule", "Kustomization"} <= set(docs)
    listed = set(docs["Kustomization"]["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk
    for doc in docs.values():
        assert doc.get("apiVersion")


def test_k8s_deployment_agrees_with_serve_flags(tmp_path):
    docs = k8s_docs()
    dep = docs["Deployment"]
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert dep["spec"]["replicas"] >= 1
    spec = pod["spec"]
    (c,) = spec["containers"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    # the --config file comes from the ConfigMap through a volume mount
    argv = list(c["args"])
    config_path = argv[argv.index("--config") + 1]
    mount_dir, key = config_path.rsplit("/", 1)
    cm_volume = volumes[mounts[mount_dir]]["configMap"]
    cm = docs["ConfigMap"]
    assert cm_volume["name"] == cm["metadata"]["name"]
    toml_file = tmp_path / key
    toml_file.write_text(cm["data"][key])
    tomllib.loads(cm["data"][key])
    argv[argv.index("--config") + 1] = str(toml_file)
    env = {}
    for item in c["env"]:
        env[item["name"]] = item.get("value", "from-secret")
    assert set(k for k in env if k.startswith(ENV_PREFIX)) <= KNOWN_ENV
    cfg = resolve(build_parser().parse_args(["serve", *argv]), env)
    assert cfg.metrics_host == "0.0.0.0"
    port = next(p for p in c["ports"] if p["name"] == "metrics")
    assert port["containerPort"] == cfg.metrics_port
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        get = c[probe]["httpGet"]
        assert get["path"] == "/metrics" and get["port"] == "metrics", probe
    res = c["resources"]
    assert {"cpu", "memory"} <= set(res["requests"]) and {"cpu", "memory"} <= set(res["limits"])
    # writable directories under a read-only root file system
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert cfg.checkpoint_dir in mounts and env["NUMBA_CACHE_DIR"] in mounts and "/tmp" in mounts
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["terminationGracePeriodSeconds"] > cfg.shutdown_timeout
    # Service and PodMonitor select these pods on the metrics port; the job label is the alerts' job
    svc = docs["Service"]
    assert svc["spec"]["selector"].items() <= labels.items()
    assert svc["spec"]["ports"][0]["targetPort"] == "metrics"
    pm = docs["PodMonitor"]["spec"]
    assert pm["selector"]["matchLabels"].items() <= labels.items()
    assert pm["podMetricsEndpoints"][0]["port"] == "metrics" and pm["podMetricsEndpoints"][0]["path"] == "/metrics"
    assert labels[pm["jobLabel"]] == "robustream"
    assert 'job="robustream"' in " ".join(alert_exprs())


def test_runbook_covers_every_alert():
    readme = (DEPLOY / "README.md").read_text()
    for rule in alert_rules():
        assert rule["alert"] in readme, rule["alert"]
    for word in ("--scale", "docker compose", "kubectl", "promtool"):
        assert word in readme


# ---- a real Prometheus server ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def prometheus_bin() -> str:
    path = prometheus_binary()
    if path is None:
        _missing_tool("prometheus")
    return path


@pytest.fixture
def served_metrics():
    """A DaemonMetrics registry served over HTTP on 127.0.0.1 (as the daemon serves it)."""
    from prometheus_client import start_http_server

    m = DaemonMetrics()
    port = free_port()
    server, _thread = start_http_server(port, addr="127.0.0.1", registry=m.registry)
    m.port = port
    m.server = server
    yield m
    server.shutdown()
    server.server_close()


def test_real_prometheus_fires_outlier_rate_alert(prometheus_bin, served_metrics, tmp_path):
    """outlier_rate = 0.4 on a served registry: the alert goes pending -> firing in a real Prometheus.

    The rules file is deploy/prometheus/alerts.yml copied with every ``for:`` shortened to 3 s
    (PrometheusServer(for_override=...)); the expressions and thresholds are the production ones.
    """
    m = served_metrics
    m.outlier_rate.set(0.4)
    m.margin_width.set(1.0)
    with PrometheusServer([f"127.0.0.1:{m.port}"], binary=prometheus_bin, for_override="3s",
                          workdir=tmp_path) as prom:  # fmt: skip
        prom.wait_for(lambda: prom.query('up{job="robustream"} == 1'), timeout=30, what="target up")
        value = prom.wait_for(lambda: prom.query("robustream_outlier_rate"), timeout=30, what="scraped value")
        assert float(value[0]["value"][1]) == pytest.approx(0.4)
        pending_or_firing = prom.wait_for_alert("RobustreamOutlierRateHigh", timeout=30)
        assert pending_or_firing["labels"]["severity"] == "warning"
        firing = prom.wait_for_alert("RobustreamOutlierRateHigh", states=("firing",), timeout=30)
        assert firing["annotations"]["summary"].endswith("outlier rate 40%")
        # the other rules do not fire (one slow scrape may make the target-down rule pend for a moment)
        active = {a["labels"]["alertname"] for a in prom.alerts() if a["state"] == "firing"}
        assert active == {"RobustreamOutlierRateHigh"}, active
        # every dashboard expression is valid PromQL for this Prometheus
        for expr in dashboard_exprs():
            if expr.startswith("label_values("):
                continue
            concrete = expr.replace("$__rate_interval", "1m").replace("$job", ".*").replace("$instance", ".*")
            prom.query(concrete)
        # back under the threshold: the alert resolves
        m.outlier_rate.set(0.2)
        prom.wait_for(lambda: not [a for a in prom.alerts() if a["labels"]["alertname"] == "RobustreamOutlierRateHigh"],
                      timeout=30, what="alert resolved")  # fmt: skip
        # metrics endpoint gone: RobustreamTargetDown
        m.server.shutdown()
        m.server.server_close()
        prom.wait_for_alert("RobustreamTargetDown", states=("firing",), timeout=40)


# ---- the real daemon with the shipped configuration files ---------------------------------------------------
def k8s_config_file(tmp_path: Path) -> Path:
    cm = k8s_docs()["ConfigMap"]
    path = tmp_path / "k8s-robustream.toml"
    path.write_text(cm["data"]["robustream.toml"])
    return path


@pytest.mark.parametrize("source", ["compose", "k8s"])
def test_shipped_config_starts_the_daemon_and_passes_the_healthcheck(source, tmp_path):
    """`robustream serve --config <shipped file>` starts (learner and options accepted), serves /metrics while
    the broker is unreachable, and the image's HEALTHCHECK command succeeds against it. Loopback address,
    a free port and a temp checkpoint dir replace the container values through the environment."""
    config = DEPLOY / "robustream.toml" if source == "compose" else k8s_config_file(tmp_path)
    port = free_port()
    env = {**os.environ, "ROBUSTREAM_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}",  # nothing listens there
           "ROBUSTREAM_METRICS_HOST": "127.0.0.1", "ROBUSTREAM_METRICS_PORT": str(port),
           "ROBUSTREAM_CHECKPOINT_DIR": str(tmp_path / "ckpt"), "ROBUSTREAM_SHUTDOWN_TIMEOUT": "3",
           "NUMBA_CACHE_DIR": str(tmp_path / "numba")}  # fmt: skip
    log = open(tmp_path / "daemon.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "robustream.cli", "serve", "--config", str(config)], env=env,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        argv = [sys.executable, *healthcheck_argv()[1:]]
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "daemon.log").read_text()[-3000:]
            check = subprocess.run(argv, env={**os.environ, "ROBUSTREAM_METRICS_PORT": str(port)},
                                   capture_output=True, timeout=30)  # fmt: skip
            if check.returncode == 0:
                break
            assert time.monotonic() < deadline, "the daemon's /metrics never answered the HEALTHCHECK command"
            time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
        for name in METRIC_NAMES:
            if name != "robustream_consumer_lag_messages":  # labelled per partition: none assigned yet
                assert name in text, name
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
