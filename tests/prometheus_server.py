"""A real Prometheus server for tests: temp config, loopback port, HTTP API helpers.

>>> with PrometheusServer(["127.0.0.1:9108"], for_override="2s") as prom:   # doctest: +SKIP
...     prom.wait_for_alert("RobustreamOutlierRateHigh", states=("firing",))
...     prom.query("robustream_outlier_rate")

The server scrapes one static job (``job="robustream"`` by default, the label the alert rules
select on) every ``scrape_interval`` and evaluates ``deploy/prometheus/alerts.yml`` every
``evaluation_interval`` (1 s both by default). The rules file is copied into the temp directory;
with ``for_override`` every rule's ``for:`` is replaced by that duration there, so an alert whose
production ``for:`` is 10 minutes goes pending -> firing within seconds in a test. The expressions
and thresholds are left untouched: only the waiting time changes.

The binary is ``prometheus`` on PATH (Debian package ``prometheus``) or ``$PROMETHEUS_BIN``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml

REPO = Path(__file__).resolve().parents[1]
ALERTS_FILE = REPO / "deploy" / "prometheus" / "alerts.yml"
INSTALL_HINT = "install it with: apt-get install prometheus (Debian), or set PROMETHEUS_BIN"


def prometheus_binary() -> str | None:
    """Path of the ``prometheus`` server binary, or None."""
    env = os.environ.get("PROMETHEUS_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    return shutil.which("prometheus")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rules_with_for(src: Path, dst: Path, for_override: str | None) -> Path:
    """Copy a rules file, replacing every rule's ``for:`` by ``for_override`` (when given)."""
    doc = yaml.safe_load(src.read_text())
    if for_override is not None:
        for group in doc["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    rule["for"] = for_override
    dst.write_text(yaml.safe_dump(doc, sort_keys=False))
    return dst


class PrometheusError(RuntimeError):
    pass


class PrometheusServer:
    """Start with ``start()`` (or ``with``), stop with ``stop()``; logs in ``self.log_path``."""

    def __init__(
        self,
        targets: Sequence[str],
        *,
        job: str = "robustream",
        rule_files: Iterable[Path] = (ALERTS_FILE,),
        for_override: str | None = None,
        scrape_interval: str = "1s",
        evaluation_interval: str = "1s",
        binary: str | None = None,
        workdir: Path | None = None,
        ready_timeout: float = 30.0,
    ):
        self.targets = list(targets)
        self.job = job
        self.rule_files = [Path(p) for p in rule_files]
        self.for_override = for_override
        self.scrape_interval = scrape_interval
        self.evaluation_interval = evaluation_interval
        self.binary = binary or prometheus_binary()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else None
        self.ready_timeout = ready_timeout
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_config(self) -> Path:
        assert self.workdir is not None
        rules = [rules_with_for(p, self.workdir / f"rules-{i}-{p.name}", self.for_override).name
                 for i, p in enumerate(self.rule_files)]  # fmt: skip
        config = {
            "global": {"scrape_interval": self.scrape_interval, "evaluation_interval": self.evaluation_interval,
                       "scrape_timeout": self.scrape_interval},  # fmt: skip
            "rule_files": rules,
            "scrape_configs": [{"job_name": self.job, "static_configs": [{"targets": self.targets}]}],
        }
        path = self.workdir / "prometheus.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def start(self) -> "PrometheusServer":
        if self.binary is None:
            raise PrometheusError(f"prometheus binary not found; {INSTALL_HINT}")
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="prometheus-test-"))
        config = self.write_config()
        (self.workdir / "data").mkdir(exist_ok=True)
        self.log_path = self.workdir / "prometheus.log"
        for attempt in range(3):  # a free port can be taken between probing and binding
            self.port = free_port()
            cmd = [self.binary, f"--config.file={config}", f"--storage.tsdb.path={self.workdir / 'data'}",
                   f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=info"]  # fmt: skip
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
            if self._wait_ready():
                return self
            self.stop(remove=False)
        raise PrometheusError(f"prometheus did not become ready; log:\n{self.log_tail()}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        return False

    def stop(self, remove: bool = True) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None
        if remove and self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> "PrometheusServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def log_tail(self, n: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    # -- HTTP API -------------------------------------------------------------------------------
    def api(self, path: str, **params: Any) -> Any:
        """GET ``/api/v1/<path>``; returns ``data`` or raises PrometheusError."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=10) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read() or b"{}")
        if body.get("status") != "success":
            raise PrometheusError(f"{path}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """Instant query; returns the result list (``[{"metric": {...}, "value": [t, "v"]}, ...]``)."""
        return self.api("query", query=expr)["result"]

    def alerts(self) -> list[dict]:
        """Active alerts (pending and firing), each with ``labels``, ``annotations``, ``state``."""
        return self.api("alerts")["alerts"]

    def targets_health(self) -> list[dict]:
        return self.api("targets")["activeTargets"]

    def wait_for(self, predicate, timeout: float = 30.0, interval: float = 0.5, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(interval)
        raise TimeoutError(f"{what} not reached in {timeout} s (last: {last!r}); prometheus log:\n{self.log_tail()}")

    def wait_for_alert(self, name: str, states: Sequence[str] = ("pending", "firing"), timeout: float = 30.0) -> dict:
        """Wait until alert ``name`` is active in one of ``states``; returns it."""

        def found() -> dict | None:
            for alert in self.alerts():
                if alert["labels"].get("alertname") == name and alert["state"] in states:
                    return alert
            return None

        return self.wait_for(found, timeout=timeout, what=f"alert {name} in {tuple(states)}")
