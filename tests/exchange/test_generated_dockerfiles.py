"""Security review (a): what a task's environment specification puts in a generated Dockerfile
is read back by Docker as it was written — never an instruction of its own.

The Dockerfiles: a SWE mode folder's ``environment/Dockerfile`` and ``tests/Dockerfile``
(``exchange/bundles/modes.py``), the docker backend's environment image
(``validators/environment_images.py``) and a sidecar's (``exchange/bundles/sidecars.py``).
Each is read here as Docker's parser reads one (lines split at ``\\n`` only, a line ending
in a backslash joined to the next, ENV's double quotes and ``$`` substitution, RUN's flags,
heredocs and exec form); where a container engine answers, the environment image and a
sidecar's are built for real and their values read back from the image and a container.
"""

import contextlib
import json
import re
import shlex
import uuid
from pathlib import Path

import pytest

from exchange.bundles import modes, sidecars
from hilbench_annotate.envspec import spec_clean
from hilbench_annotate.errors import DomainError
from validators.environment_images import dockerfile as environment_dockerfile

from ..validators.conftest import docker_or_skip

MARKER = "/tmp/pwned"  # noqa: S108 - a path inside the image being built
# An ENV value: Docker substitutes $VAR in ENV, and double quotes and backslashes are its own.
VALUE = (
    f"$(touch {MARKER}) `touch {MARKER}` \"double\" 'single' ${{HOME}} $HOME back\\slash\\ "
    "end\\ é\ttab!"
)
# Commands the author writes: each must be one RUN that runs as written, whatever it holds.
COMMANDS = [
    "pip install -e .",  # an ordinary command, written as it always was
    "echo one > /tmp/one\nenv INJECTED=yes",  # `env X=…` on its own line is Docker's ENV
    "echo two \\",  # a trailing backslash would join the next instruction
    "touch /tmp/after-two",
    "cat <<EOF > /tmp/here\nhello $HOME\nFROM scratch\nEOF",  # a heredoc, and FROM in it
    "[ -d /testbed ] && echo bracket > /tmp/bracket",  # `[` would be read as exec form
    "echo three\r\nUSER root",
    "--network=host true",  # a flag of RUN, were it read as one
    'printf "%s" "$HOSTILE" > /tmp/seen',
]
PACKAGES = ["requests==2.31.0", "evil\nUSER root", "a'b\"c$(touch /tmp/pwned)"]
# Those a shell runs without an error here, for a real build (no package to install from).
BUILDABLE = [c for c in COMMANDS[1:] if "USER" not in c and not c.startswith("-")]


def instructions(text: str) -> list[tuple[str, str]]:
    """(instruction, arguments) as Docker's parser reads ``text``: lines split at ``\\n``
    (a trailing ``\\r`` dropped), a line ending in a backslash joined with the next, blank
    and comment lines skipped."""
    found, pending = [], None
    for raw in text.split("\n"):
        line = raw.removesuffix("\r")
        if pending is None and (not line.strip() or line.lstrip().startswith("#")):
            continue
        joined = (pending or "") + line
        if re.search(r"\\[ \t]*$", line):
            pending = re.sub(r"\\[ \t]*$", "", joined)
            continue
        pending = None
        word, _, rest = joined.strip().partition(" ")
        found.append((word.upper(), rest.strip()))
    assert pending is None, "the file ends inside a continued line"
    return found


def env_value(arguments: str) -> tuple[str, str]:
    """(name, value) of ``ENV name=value`` as Docker reads it: in double quotes only ``\\"``,
    ``\\$`` and ``\\\\`` are escapes, an unescaped ``$`` would be substituted and an
    unescaped ``"`` would end the quotes; a bare value must hold nothing Docker reads."""
    name, _, value = arguments.partition("=")
    if not value.startswith('"'):
        assert re.fullmatch(r"[A-Za-z0-9_./:@+,-]*", value), arguments
        return name, value
    assert len(value) >= 2 and value.endswith('"'), arguments
    body, out, i = value[1:-1], [], 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            assert i + 1 < len(body), f"the closing quote is escaped: {arguments}"
            following = body[i + 1]
            out.append(following if following in '"$\\' else "\\" + following)
            i += 2
            continue
        assert char not in '"$', f"an unescaped {char} in {arguments}"
        out.append(char)
        i += 1
    return name, "".join(out)


def run_command(arguments: str) -> str:
    """What ``/bin/sh -c`` receives from ``RUN arguments``: the exec form's third item, or the
    shell form as written (which must carry no flag, exec-form bracket or heredoc)."""
    if arguments.startswith("["):
        argv = json.loads(arguments)
        assert argv[:2] == ["/bin/sh", "-c"] and len(argv) == 3, arguments
        assert "<<" not in arguments
        return argv[2]
    assert not arguments.startswith("-") and "<<" not in arguments, arguments
    return arguments


def _spec(**extra):
    return spec_clean({
        "language": "python", "python": "3.11", "packages": PACKAGES,
        "pre_install": COMMANDS[:4], "install": COMMANDS[4:],
        "env": {"HOSTILE": VALUE, "PLAIN": "1"}, **extra,
    })  # fmt: skip


def _assert_spec_read_back(text: str, spec: dict, *, allowed: set[str]) -> None:
    read = instructions(text)
    kinds = [kind for kind, _ in read]
    assert set(kinds) <= allowed, kinds
    assert kinds.count("FROM") == 1 and "USER" not in kinds[:-1]
    envs = dict(env_value(arguments) for kind, arguments in read if kind == "ENV")
    assert envs == spec["env"]
    commands = [run_command(arguments) for kind, arguments in read if kind == "RUN"]
    pip = next(c for c in commands if c.startswith("python -m pip install") and "-r" not in c)
    assert shlex.split(pip)[-len(PACKAGES) :] == PACKAGES
    steps = [*spec["pre_install"], *spec["install"]]
    start = commands.index(steps[0])
    assert commands[start : start + len(steps)] == steps
    assert f"RUN {COMMANDS[0]}\n" in text  # an ordinary command is written as it always was


def test_spec_clean_keeps_the_author_s_commands_and_values():
    spec = _spec()
    assert spec["pre_install"] + spec["install"] == COMMANDS
    assert spec["env"]["HOSTILE"] == VALUE


@pytest.mark.parametrize("mode", ["baseline", "ask_human"])
def test_a_mode_folder_s_dockerfiles_read_back_as_written(mode):
    spec = _spec()
    files = modes.swe_mode_files(
        mode=mode, folder="swe_0", image=f"hilbench-annotate/swe_0-{mode}:abc",
        repository=None, spec=spec, registry=b"{}", gold_patch="", test_patch="",
        tests={}, judge_settings={},
    )  # fmt: skip
    allowed = {"FROM", "RUN", "ENV", "COPY", "WORKDIR"}
    _assert_spec_read_back(files["environment/Dockerfile"].decode(), spec, allowed=allowed)
    _assert_spec_read_back(files["tests/Dockerfile"].decode(), spec, allowed=allowed)


def test_the_docker_backend_s_environment_image_reads_back_as_written():
    spec = _spec()
    text = environment_dockerfile(spec, base_image="python:3.11-slim")
    allowed = {"FROM", "RUN", "ENV", "COPY", "WORKDIR", "USER"}
    _assert_spec_read_back(text, spec, allowed=allowed)
    assert instructions(text)[-1] == ("USER", "1000")  # only the one it always ends with


def test_a_sidecar_s_env_values_read_back_as_written():
    text = sidecars.server_dockerfile(
        "sql_tools.py", name="sql-tools", env={"HOSTILE": VALUE, "DATA_DIR": "/srv/data"}
    )
    read = instructions(text)
    envs = dict(env_value(arguments) for kind, arguments in read if kind == "ENV")
    assert envs == {"HOSTILE": VALUE, "DATA_DIR": "/srv/data", "PORT": "8001"}
    assert "ENV DATA_DIR=/srv/data\n" in text  # a plain value is written as it always was
    assert [k for k, _ in read].count("USER") == 1


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"V": "one\nUSER root"}, "env: the value of V holds a line break"),
        ({"V": "one\rUSER root"}, "env: the value of V holds a line break"),
        ({"V\n": "x"}, "is not a variable name"),
        ({"V\nUSER root\nENV W": "x"}, "is not a variable name"),
    ],
)
def test_what_no_dockerfile_line_can_hold_is_refused_by_name(env, words):
    """At import or edit (``spec_clean``), and by each writer for a specification stored
    before that check existed."""
    with pytest.raises(DomainError, match=words):
        spec_clean({"env": env})
    spec = {**_spec(), "env": env}
    with pytest.raises(DomainError, match=words):
        modes.swe_environment_dockerfile(spec, copy_tools=False)
    with pytest.raises(DomainError, match=words):
        environment_dockerfile(spec, base_image="python:3.11-slim")
    with pytest.raises(DomainError, match=words):
        sidecars.server_dockerfile("x.py", name="sql-tools", env=env)


def test_a_python_version_cannot_carry_an_instruction():
    with pytest.raises(DomainError, match="python must be a version"):
        spec_clean({"python": "3.11-slim\nUSER root"})
    spec = {**_spec(), "python": "3.11-slim\nUSER root"}
    with pytest.raises(DomainError, match="python must be a version"):
        modes.swe_environment_dockerfile(spec, copy_tools=False)


# --- built by a real engine ------------------------------------------------------------------


@pytest.fixture
def engine():
    docker_or_skip("python:3.11-slim")
    import docker

    client = docker.from_env(timeout=300)
    tags: list[str] = []
    yield client, tags
    for tag in tags:
        with contextlib.suppress(docker.errors.DockerException):
            client.images.remove(tag, force=True)
    client.close()


def _build(engine, context: Path, text: str) -> str:
    client, tags = engine
    (context / "Dockerfile").write_text(text)
    tag = f"hilbench-test-quoting:{uuid.uuid4().hex[:12]}"
    tags.append(tag)
    client.images.build(path=str(context), tag=tag, rm=True, network_mode="none")
    return tag


READ_BACK = (
    "import json, os; print(json.dumps({"
    "'env': {k: os.environ.get(k) for k in ('HOSTILE', 'INJECTED')}, "
    "'files': {p: open(p).read() if os.path.exists(p) else None for p in "
    "('/tmp/seen', '/tmp/one', '/tmp/after-two', '/tmp/here', '/tmp/bracket', '/tmp/pwned')}"
    "}))"
)


@pytest.mark.containers
def test_the_environment_image_built_holds_the_values_literally(engine, tmp_path):
    # No registry is reachable: nothing to install.
    spec = _spec(packages=[], pre_install=BUILDABLE[:4], install=BUILDABLE[4:])
    (tmp_path / "testbed").mkdir()
    (tmp_path / "testbed" / "README").write_text("a task's tree\n")
    tag = _build(engine, tmp_path, environment_dockerfile(spec, base_image="python:3.11-slim"))
    client, _ = engine
    config = client.images.get(tag).attrs["Config"]
    assert f"HOSTILE={VALUE}" in config["Env"]
    assert not any(e.startswith("INJECTED=") for e in config["Env"])
    assert config["User"] == "1000"
    output = client.containers.run(
        tag, ["python", "-c", READ_BACK], remove=True, network_disabled=True, user="0"
    )
    seen = json.loads(output)
    assert seen["env"] == {"HOSTILE": VALUE, "INJECTED": None}
    assert seen["files"] == {
        "/tmp/seen": VALUE,  # the RUN step saw the value itself
        "/tmp/one": "one\n",
        "/tmp/after-two": "",  # the step after the trailing backslash ran on its own
        "/tmp/here": "hello /root\nFROM scratch\n",  # the heredoc was the shell's
        "/tmp/bracket": "bracket\n",
        "/tmp/pwned": None,
    }


@pytest.mark.containers
def test_a_sidecar_image_built_holds_the_value_literally(engine, tmp_path):
    text = sidecars.server_dockerfile("srv.py", name="sql-tools", env={"HOSTILE": VALUE})
    tag = _build(engine, tmp_path, text)
    client, _ = engine
    assert f"HOSTILE={VALUE}" in client.images.get(tag).attrs["Config"]["Env"]
    output = client.containers.run(
        tag, ["python", "-c", READ_BACK], remove=True, network_disabled=True
    )
    seen = json.loads(output)
    assert seen["env"]["HOSTILE"] == VALUE and seen["files"]["/tmp/pwned"] is None
