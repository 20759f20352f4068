"""Tests mirror the tree: the test file of a module is found from the module's name.

The rule (tests/README.md): ``cas/x.py`` and ``packer/x.py`` -> ``tests/test_x.py``;
``cas/remote/x.py`` -> ``tests/test_remote_x.py``; ``casapp/cli/x_cmds.py`` ->
``tests/test_cli_x.py``; ``casapp/x.py`` -> ``tests/test_casapp_x.py``;
``packer/summaries/x.py`` -> ``tests/test_summaries_x.py``; ``packer/lang/x.py`` ->
``tests/test_lang_x.py``; ``memory/x.py`` -> ``tests/test_memory_x.py``. A module without such
a file is listed in `EXEMPT` with the reason; a reason that names test files names ones that
exist. A new module must come with its test file or with an entry here, so this file is where a
missing test shows.
"""

from __future__ import annotations

import re

from tests.conftest import ROOT

PACKAGES = {  # folder -> the prefix of its test files
    "cas": "test_",
    "cas/remote": "test_remote_",
    "packer": "test_",
    "memory": "test_memory_",
    "packer/summaries": "test_summaries_",
    "packer/lang": "test_lang_",
    "casapp": "test_casapp_",
    "casapp/cli": "test_cli_",
}
NOT_MODULES = {
    "__init__.py": "a package's re-exports and lazy loading; tested through what it exports",
    "__main__.py": "the `cas` entry point; every test that runs a real `cas` process runs it",
}

_LANGUAGES = "tests/test_summaries_languages.py: one tree-sitter engine, one query per language"
_DOCUMENTS = "tests/test_summaries_docs.py: documents and configuration files, side by side"
EXEMPT: dict[str, str] = {
    # cas: the store's private parts are tested through the store; the rest where it shows.
    "cas/datafile.py": "tests/test_damage.py: damage found in the data file before LMDB reads it",
    "cas/display.py": "tests/test_names.py: hostile names in every output",
    "cas/errors.py": "the error classes; each is checked by the tests of what raises it",
    "cas/fsutil.py": "tests/test_output.py: atomic writes to whatever `-o PATH` names",
    "cas/lease.py": "tests/test_pack_lease.py and tests/test_gc.py: a pack's lease against gc",
    "cas/progress.py": "no direct tests yet: drawn on a terminal in tests/test_remote_pull.py",
    "cas/puts.py": "private to the store: tests/test_store.py and tests/test_batch.py",
    "cas/records.py": "private to the store: tests/test_verify.py and tests/test_damage.py",
    "cas/space.py": "tests/test_full_disk.py: a real full file system",
    "cas/store_tables.py": "private to the store: tests/test_store.py",
    "cas/store_kv.py": "the store's key-value face: tests/test_store.py (kv_update from two "
    "threads), tests/test_cache.py, tests/test_remote_config.py, tests/test_memory_usage.py",
    "cas/store_refs.py": "the store's references: pins in tests/test_roots.py, leases in "
    "tests/test_gc.py and tests/test_pack_lease.py, swap_pin in tests/test_memory_state.py",
    "cas/threads.py": "no direct tests yet: behind every pack (tests/test_ingest.py)",
    "cas/tree.py": "tests/test_cli_store.py (cas put -r) and tests/test_ingest_races.py",
    # casapp/cli: one test file per command, named for the command.
    "casapp/cli/_common.py": "what every command shares; tested through every tests/test_cli_*.py "
    "and, the global options after any command, tests/test_global_options.py",
    "casapp/cli/agent_cmds.py": "tests/test_search.py, tests/test_load.py, "
    "tests/test_casapp_mcpserver.py",
    "casapp/cli/app.py": "the click group: tests/test_global_options.py, tests/test_imports.py",
    "casapp/cli/context.py": "what a command prints through: tests/test_cli_quick.py (the same "
    "bytes read by either parser) and tests/test_names.py",
    "casapp/cli/searching.py": "tests/test_search.py and tests/test_cli_quick.py",
    "casapp/cli/maint_cmds.py": "tests/test_verify.py, tests/test_gc.py, tests/test_roots.py",
    # cas/remote
    "cas/remote/storage.py": "the ObjectStorage protocol: tests/test_remote_memory_bucket.py runs "
    "one suite against both implementations",
    "cas/remote/transfer.py": "no direct tests yet: the threads of every push and pull "
    "(tests/test_remote_push.py, tests/test_remote_pull.py)",
    # packer
    "packer/build.py": "`cas pack` itself: tests/test_cli_pack.py, tests/test_incremental.py, "
    "tests/test_determinism.py",
    "packer/explain.py": "no direct tests yet: `cas pack --explain` in tests/test_pack_quality.py",
    "packer/ignore.py": "tests/test_scan.py: against git itself",
    "packer/literal_search.py": "part of the secret scan: tests/test_secrets.py",
    "packer/rating_scale.py": "the rating's constants: tests/test_rating.py",
    "packer/render.py": "tests/test_cli_pack.py renders every mode and format",
    "packer/rules.py": "the built-in tier rules: tests/test_tiers.py",
    "packer/secret_rules.py": "part of the secret scan: tests/test_secrets.py",
    # packer/summaries
    **{
        f"packer/summaries/{name}.py": _LANGUAGES
        for name in [
            "cfamily",
            "csharp",
            "go",
            "java",
            "kotlin",
            "php",
            "ruby",
            "rust",
            "swift",
            "treesitter",
            "typescript",
        ]
    },
    **{
        f"packer/summaries/{name}.py": _DOCUMENTS
        for name in ("config_json", "config_toml", "config_yaml", "markdown", "rst", "text")
    },
    "packer/summaries/comments.py": "tests/test_summaries_languages.py and tests/test_lexicon.py",
    # packer/lang
    "packer/lang/record.py": "the shape of a record: tests/test_lang_registry.py checks every one",
}


def expected_test(module: str) -> str:
    """The test file the naming rule gives ``module`` (a path like ``cas/remote/pull.py``)."""
    folder, _, name = module.rpartition("/")
    stem = name.removesuffix(".py")
    if folder == "casapp/cli":
        stem = stem.removesuffix("_cmds")
    return f"tests/{PACKAGES[folder]}{stem}.py"


def modules() -> list[str]:
    return sorted(
        path.relative_to(ROOT).as_posix()
        for folder in PACKAGES
        for path in (ROOT / folder).glob("*.py")
        if path.name not in NOT_MODULES
    )


def test_every_module_has_its_test_file_or_a_reason() -> None:
    missing = [
        f"{m} -> {expected_test(m)}"
        for m in modules()
        if m not in EXEMPT and not (ROOT / expected_test(m)).is_file()
    ]
    assert not missing, "modules without their test file (add it, or a reason to EXEMPT):\n" + (
        "\n".join(missing)
    )


def test_exemptions_are_current() -> None:
    known = set(modules())
    for module, reason in EXEMPT.items():
        assert module in known, f"{module} is exempt but no longer exists"
        assert not (ROOT / expected_test(module)).is_file(), (
            f"{module} has {expected_test(module)} now: drop its exemption"
        )
        for named in re.findall(r"tests/test_\w+\.py", reason):
            assert (ROOT / named).is_file(), f"{module}: {named} does not exist"


def test_the_rule() -> None:
    assert expected_test("cas/store.py") == "tests/test_store.py"
    assert expected_test("cas/remote/pull.py") == "tests/test_remote_pull.py"
    assert expected_test("casapp/cli/remote_cmds.py") == "tests/test_cli_remote.py"
    assert expected_test("packer/scan.py") == "tests/test_scan.py"
    assert expected_test("packer/summaries/python.py") == "tests/test_summaries_python.py"
    # Two modules never map to one test file.
    mapped = [expected_test(m) for m in modules()]
    assert len(mapped) == len(set(mapped)), sorted(t for t in mapped if mapped.count(t) > 1)


def test_the_rule_is_written_down() -> None:
    readme = (ROOT / "tests" / "README.md").read_text(encoding="utf-8")
    for folder, prefix in PACKAGES.items():
        assert f"`{folder}/" in readme and f"`tests/{prefix}" in readme, folder


def test_no_test_file_imports_another() -> None:
    """Shared helpers live in conftest.py or a helper module (tests/README.md), so a test file
    can be moved or split without breaking another."""
    found = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        found += [
            f"{path.name}: {m}"
            for m in re.findall(r"^from tests\.test_\w+ .*|^import tests\.test_\w+", text, re.M)
        ]
    assert not found, found
