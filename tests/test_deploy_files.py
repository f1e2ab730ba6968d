"""The deployment files: the compose file parses, names its services, and runs commands our CLI accepts."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import typer
import yaml
from localbo.cli import app, auth_refusal, is_loopback

ROOT = Path(__file__).resolve().parents[1]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def parses_as_cli(command: list[str]) -> None:
    """``localbo SUB ARGS`` parsed by the real CLI (options and values checked), without running it."""
    assert command[0] == "localbo"
    group = typer.main.get_command(app)
    ctx = group.make_context("localbo", list(command[1:]))
    sub = group.get_command(ctx, command[1])
    sub.make_context(command[1], list(command[2:]), parent=ctx)


def test_compose_file_has_api_worker_postgres_and_redis_wired_together() -> None:
    services = compose()["services"]
    assert {"api", "worker", "postgres", "redis"} <= set(services)
    api, worker = services["api"], services["worker"]
    assert api["build"] == "." and worker["build"] == "."  # one image for both
    env = api["environment"]
    assert env["LOCALBO_EXECUTOR"] == "celery"
    assert re.match(r"postgresql\+psycopg://\w+:\w+@postgres:5432/\w+$", env["LOCALBO_DATABASE_URL"])
    assert env["LOCALBO_REDIS_URL"] == worker["environment"]["LOCALBO_REDIS_URL"] == "redis://redis:6379/0"
    assert "LOCALBO_TOKENS" in env, "the api binds 0.0.0.0, so it must have tokens"
    assert set(api["depends_on"]) == {"postgres", "redis"} and "redis" in worker["depends_on"]
    assert "--workers" in api["command"], "several API processes"
    for name in ("api", "worker", "worker-gpu"):
        parses_as_cli(services[name]["command"])
    assert services["worker-gpu"]["profiles"] == ["gpu"], "a GPU worker only when asked for"


def test_compose_api_refuses_to_start_without_a_real_token() -> None:
    """The api binds 0.0.0.0: a LOCALBO_TOKENS that parses to no token (";", blanks) must stop it, like an unset one."""
    api = compose()["services"]["api"]
    command = api["command"]
    assert "--insecure" not in command
    host = command[command.index("--host") + 1]
    assert not is_loopback(host)
    for no_token in ("", ";", " ", " ; ;"):
        assert auth_refusal(no_token, host, insecure=False), no_token
    assert auth_refusal("change-me=admin", host, insecure=False) is None
    # no default value: compose itself stops when the variable is unset or empty
    assert re.fullmatch(r"\$\{LOCALBO_TOKENS:\?[^}]+\}", api["environment"]["LOCALBO_TOKENS"])
    assert all(port.startswith("127.0.0.1:") for port in api["ports"]), "published on the host's loopback only"


def test_dockerfile_installs_cpu_torch_before_the_service_and_copies_what_exists() -> None:
    text = (ROOT / "Dockerfile").read_text()
    torch_at = text.index('pip install --index-url "${TORCH_INDEX}" "${TORCH_SPEC}"')
    assert "ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu" in text
    assert torch_at < text.index("pip install -r requirements.lock"), "torch first, so pip pulls no CUDA build"
    for source in re.findall(r"^COPY (\S+)", text, flags=re.M):
        assert (ROOT / source).exists(), source
    cmd = re.search(r"^CMD (\[.*\])$", text, flags=re.M)
    assert cmd is not None
    parses_as_cli(yaml.safe_load(cmd.group(1)))


def test_the_image_checks_its_health_and_runs_on_sqlite_in_a_writable_directory() -> None:
    text = (ROOT / "Dockerfile").read_text()
    health = re.search(r"^HEALTHCHECK .*?CMD (\[.*\])$", text, flags=re.M | re.S)
    assert health is not None and "http://127.0.0.1:8000/healthz" in health.group(1)
    assert "ENV LOCALBO_DATABASE_URL=sqlite:////data/localbo.db" in text
    assert 'VOLUME ["/data"]' in text and "chown localbo /data" in text
    assert text.index("chown localbo /data") < text.index("USER localbo"), "made writable before dropping root"


def test_the_image_installs_the_locked_versions() -> None:
    """requirements.lock (scripts/lock.sh) pins every dependency of the service and the client but torch,
    each at a version their pyproject allows; the image installs it, then the packages without deps."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    text = (ROOT / "Dockerfile").read_text()
    assert text.index("pip install -r requirements.lock") < text.index("pip install --no-deps . ./client")
    pinned = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            requirement = Requirement(line)
            (version,) = [s.version for s in requirement.specifier if s.operator == "=="]
            pinned[canonicalize_name(requirement.name)] = version
    declared = []
    for pyproject in (ROOT / "pyproject.toml", ROOT / "client" / "pyproject.toml"):
        declared += tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    for raw in declared:
        requirement = Requirement(raw)
        name = canonicalize_name(requirement.name)
        if name == "torch":
            assert name not in pinned, "torch comes from PyTorch's index, installed first"
            continue
        assert name in pinned, f"{name} is not in requirements.lock: run scripts/lock.sh"
        assert requirement.specifier.contains(pinned[name]), (name, pinned[name], str(requirement.specifier))
    assert not [n for n in pinned if n.startswith("nvidia")], "resolved against the CPU torch"


def test_the_dev_environment_is_the_locked_one() -> None:
    """Issue 28, item 3: the tests run on the versions the image ships. scripts/setup.sh installs every part
    with requirements.lock as its constraints; the only packages allowed to differ are those it names in
    UNLOCKED_FOR_EXTRAS (an extra needs another version), each with its reason there."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    setup = (ROOT / "scripts" / "setup.sh").read_text()
    match = re.search(r"^UNLOCKED_FOR_EXTRAS=\(([^)]*)\)", setup, flags=re.M)
    assert match is not None
    unlocked = {canonicalize_name(name) for name in match.group(1).split()}
    differ = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if not line or line.startswith((" ", "#")):
            continue
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue  # another Python or platform
        (locked,) = [s.version for s in requirement.specifier if s.operator == "=="]
        try:
            installed: str | None = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed != locked and canonicalize_name(requirement.name) not in unlocked:
            differ[requirement.name] = f"lock {locked}, installed {installed}"
    assert not differ, f"run scripts/setup.sh (make setup) to install the lock's versions: {differ}"


def test_every_worker_has_a_health_check_on_its_metrics_port() -> None:
    services = compose()["services"]
    for name in ("worker", "worker-gpu"):
        worker = services[name]
        port = worker["environment"]["LOCALBO_WORKER_METRICS_PORT"]
        assert f"http://127.0.0.1:{port}/metrics" in " ".join(worker["healthcheck"]["test"]), name
    assert "/healthz" in " ".join(services["api"]["healthcheck"]["test"])


def test_docker_compose_itself_validates_the_file() -> None:
    """The suite does not build the stack (minutes and GBs; scripts/container_check.sh does, by hand, and
    commits its output): Debian's docker-compose (which .ci/run installs) parses, interpolates and validates
    the file against the compose schema."""
    import shutil
    import subprocess

    tool = shutil.which("docker-compose")
    assert tool, "docker-compose is missing: apt-get install docker-compose (.ci/run does)"
    env = {"PATH": "/usr/bin:/bin", "LOCALBO_TOKENS": "change-me=admin"}
    done = subprocess.run([tool, "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True, text=True,
                          env=env, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)["services"]
    assert resolved["api"]["environment"]["LOCALBO_TOKENS"] == "change-me=admin"
    assert "healthcheck" in resolved["worker"] and "healthcheck" in resolved["api"]
    unset = subprocess.run([tool, "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin"}, timeout=60)  # fmt: skip
    assert unset.returncode != 0 and "LOCALBO_TOKENS" in unset.stderr, "no tokens: compose refuses to start"


def test_the_debian_override_builds_every_image_from_the_local_base() -> None:
    """deploy/compose.debian.yml, which scripts/container_check.sh lays over the file where Docker Hub is out
    of reach: every service's image is built here from localbo-base:bookworm, and the merge still validates."""
    import shutil
    import subprocess

    tool = shutil.which("docker-compose")
    assert tool, "docker-compose is missing: apt-get install docker-compose (.ci/run does)"
    files = ["-f", str(ROOT / "docker-compose.yml"), "-f", str(ROOT / "deploy" / "compose.debian.yml")]
    done = subprocess.run([tool, *files, "config"], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "LOCALBO_TOKENS": "change-me=admin"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    services = yaml.safe_load(done.stdout)["services"]
    for name in ("api", "worker"):
        assert services[name]["build"]["args"]["BASE"] == "localbo-base:bookworm", name
    for name in ("postgres", "redis"):
        dockerfile = ROOT / "deploy" / "debian" / services[name]["build"]["dockerfile"]
        assert "ARG BASE=localbo-base:bookworm" in dockerfile.read_text(), name
    assert "--protected-mode" in services["redis"]["command"], "Redis without a config refuses other containers"
    assert "ARG BASE=python:3.11-slim" in (ROOT / "Dockerfile").read_text(), "the default base is unchanged"


def test_the_container_check_ran_and_its_results_say_it_passed() -> None:
    """The check's output is committed whole (benchmarks/results/container_check.txt): the stack was built,
    started, and served an ask/tell cycle whose points the worker made."""
    import subprocess

    script = ROOT / "scripts" / "container_check.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, timeout=30).returncode == 0
    results = (ROOT / "benchmarks" / "results" / "container_check.txt").read_text()
    assert "container check passed" in results
    assert "summary: 8 complete, 0 fallback" in results
    assert re.search(r"the worker ran [1-9]\d* suggest tasks", results)
