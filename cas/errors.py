"""Every error the project raises on purpose, in one place.

Each class carries the fields that describe the failure, builds its own one-line message, and owns
its exit code. The CLI maps `CasError` to that code and prints the message; anything else is a bug
and is shown with a traceback only under ``--debug``.

Exit codes (every command):
  0  success
  1  the command ran and found a problem (verify failure, not found, corrupt data, budget)
  2  it could not run as asked (usage, bad input, no store, bad configuration)
"""

from __future__ import annotations

from cas.display import echoed


def _path(path: str) -> str:
    """A path from outside as an error echoes it: escaped if it must be, cut if it is long."""
    return echoed(path, quoted=False)


EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CasError(Exception):
    """Root of every error the project raises deliberately."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


# --- exit 2: the command could not run as asked -------------------------------------------------


class UsageError(CasError):
    """Bad input from the user: a malformed argument, a missing file, a wrong kind of file."""

    exit_code = EXIT_USAGE


class BadDigest(UsageError):
    """A digest that does not parse."""

    def __init__(self, text: str) -> None:
        super().__init__(
            f"malformed digest {echoed(text, limit=80)}: expected 'blake3:' followed by 64 "
            "lowercase hex digits"
        )
        self.text = text


class InputError(UsageError):
    """A path given as input cannot be read as a regular file."""

    def __init__(self, path: str, problem: str, hint: str = "") -> None:
        msg = f"{_path(path)}: {problem}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)
        self.path = path
        self.problem = problem
        self.hint = hint


class OutputError(UsageError):
    """The output (stdout or a file) cannot be written: a full disk, a closed device."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"cannot write {_path(where)}: {problem}")
        self.where = where
        self.problem = problem


class StoreNotFound(UsageError):
    """No store at or above the working directory."""

    def __init__(self, start: str) -> None:
        super().__init__(
            f"no cas store found in {_path(start)} or any parent directory: run 'cas init' to "
            "create one, or pass --store PATH / set CAS_STORE"
        )
        self.start = start


class StoreVersionError(UsageError):
    """The store was written by a newer (or unknown) format version."""

    def __init__(self, path: str, found: int, supported: int) -> None:
        super().__init__(
            f"store {_path(path)} has format version {found}, but this cas supports up to "
            f"{supported}: "
            "upgrade cas to open it"
        )
        self.path = path
        self.found = found
        self.supported = supported


class StoreAccessError(UsageError):
    """The store exists but cannot be opened as asked (permissions, a damaged file)."""

    def __init__(self, path: str, problem: str, *, action: str = "open") -> None:
        super().__init__(f"cannot {action} store {_path(path)}: {problem}")
        self.path = path
        self.problem = problem


class IndexUnavailable(UsageError):
    """The search index cannot be used or rebuilt where it is (its folder cannot be opened,
    created or written): rebuilding would not help, the user must."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(
            f"cannot use the search index {_path(path)}: {problem}; make it writable, or delete "
            "it (a cache: the next search rebuilds it)"
        )
        self.path = path
        self.problem = problem


class StoreDamaged(UsageError):
    """The store's data file is damaged (truncated, overwritten, bits flipped): it is refused
    before anything reads the damaged part, by every command alike."""

    def __init__(self, path: str, problem: str, details: tuple[str, ...] = ()) -> None:
        more = f" (and {len(details) - 1} more problems)" if len(details) > 1 else ""
        super().__init__(
            f"damaged store {_path(path)}: {problem}{more}; restore .cas from a copy, or move it "
            "aside and rebuild it ('cas init', then 'cas pull' from a remote, or 'cas pack')"
        )
        self.path = path
        self.problem = problem
        self.details = details or (problem,)


class KeyTooLong(UsageError):
    """A key over the store's key size limit, where the caller chose the key (a name)."""

    def __init__(self, table: str, size: int, limit: int) -> None:
        super().__init__(
            f"a {table} name of {size} bytes is too long: the store keeps names of at most "
            f"{limit} bytes (UTF-8)"
        )
        self.table = table
        self.size = size
        self.limit = limit


class BadRecordSize(UsageError):
    """LMDB refused a key or value for its size (MDB_BAD_VALSIZE): a caller-chosen key over the
    key size limit. Nothing was written; it is never a full disk."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"store {_path(path)} refused a key or value of a size it cannot hold (keys, such as "
            "pin names, are limited to 511 bytes); nothing was written"
        )
        self.path = path


class MemoryNotGranted(UsageError):
    """A pack that holds a memory (a memory pack, a load drawn on one), named where that memory
    was not asked for (`cas.visibility`): it is refused, never shown."""

    def __init__(self, pack: str, scopes: list[str], unknown: bool) -> None:
        if unknown:
            why = (
                "holds a memory whose scope cannot be told (the memory state it was made from "
                "is gone or unreadable), so no --memory-scope grants it"
            )
        else:
            grant = " ".join(f"--memory-scope {scope}" for scope in scopes)
            why = (
                f"holds the memory of {', '.join(scopes)}, seen only where it is asked for: "
                f"add {grant} to use it"
            )
        super().__init__(f"pack {echoed(pack)} {why}")
        self.pack = pack
        self.scopes = scopes
        self.unknown = unknown


class StoreExists(UsageError):
    """`cas init` on a directory that already holds a store."""

    def __init__(self, path: str) -> None:
        super().__init__(f"a cas store already exists at {_path(path)}")
        self.path = path


class ConfigError(UsageError):
    """The project configuration is wrong: names the file, the key and what is allowed."""

    def __init__(self, file: str, key: str, problem: str) -> None:
        where = f"{_path(file)}: {_path(key)}" if key else _path(file)
        super().__init__(f"{where}: {problem}")
        self.file = file
        self.key = key
        self.problem = problem


class UnknownName(UsageError):
    """A scope or target named on the command line that the configuration does not define."""

    def __init__(self, what: str, name: str, known: list[str], source: str, hint: str = "") -> None:
        listed = ", ".join(known) if known else "none"
        msg = f"{what} {echoed(name)} is not configured in {source}; {what}s there: {listed}"
        super().__init__(msg + (f" ({hint})" if hint else ""))
        self.what = what
        self.name = name
        self.known = known
        self.source = source


class HistoryError(UsageError):
    """The git history of a project cannot be read: not a git repository, an unknown revision."""

    def __init__(self, root: str, problem: str) -> None:
        super().__init__(f"{_path(root)}: {problem}")
        self.root = root
        self.problem = problem


class SecretInName(UsageError):
    """A name from outside that a memory would store and show (a fact key, a scope id) holds a
    secret: refused before anything is written. The message names the kinds, never the value."""

    def __init__(self, what: str, kinds: tuple[str, ...], hint: str) -> None:
        super().__init__(
            f"the {what} holds a secret ({', '.join(kinds)}) and is refused: names are stored "
            f"and shown as given; {hint}"
        )
        self.what = what
        self.kinds = kinds


class ManifestError(UsageError):
    """Bytes that do not decode as a valid manifest of a supported format."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{_path(source)}: not a valid cas manifest: {problem}")
        self.source = source
        self.problem = problem


class StoreFull(UsageError):
    """The disk (or the largest map LMDB may grow to) is full; the batch was rolled back. Unless
    what failed was itself a cleanup (gc, a rollback: ``cleanup``), the way out it names is
    `cas gc` too: what no pack references any more (the files of earlier packs) holds disk
    space until gc deletes it and gives its pages back."""

    def __init__(
        self,
        path: str,
        detail: str,
        outcome: str = "the last batch was rolled back, nothing was half-written",
        *,
        cleanup: bool = False,
    ) -> None:
        way_out = (
            "free disk space and retry"
            if cleanup
            else "free disk space, or run 'cas gc' to delete what no pack references any more "
            "and give its space back, and retry"
        )
        super().__init__(f"store {_path(path)} is full ({detail}): {outcome}; {way_out}")
        self.path = path
        self.detail = detail
        self.cleanup = cleanup


class RollbackIncomplete(UsageError):
    """A batch failed, and taking back what its earlier commits stored failed too (a disk too
    full even for the deletions): says what is left, unreferenced, and how to clear it."""

    def __init__(self, path: str, cause: str, problem: object, blobs: int, chunks: int) -> None:
        super().__init__(
            f"store {_path(path)}: a batch failed ({cause}) and rolling back its earlier commits "
            f"failed too ({problem}): up to {blobs} blobs and {chunks} chunks are left, "
            "referenced by nothing; run 'cas gc --grace 0' once there is room"
        )
        self.path = path
        self.blobs = blobs
        self.chunks = chunks


class RemoteError(UsageError):
    """A remote cannot be used as asked. Messages never hold credentials, nor the server's own
    error text (which may echo request details); only what the user can act on."""

    def __init__(self, remote: str, problem: str, hint: str = "") -> None:
        msg = f"remote {echoed(remote)}: {problem}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)
        self.remote = remote
        self.problem = problem


class RemoteUnreachable(RemoteError):
    """The endpoint does not answer (refused, timed out, name not resolved)."""

    def __init__(self, remote: str, endpoint: str, detail: str) -> None:
        super().__init__(remote, f"cannot reach {endpoint}: {detail}", "is the server up?")
        self.endpoint = endpoint


class RemoteTimeout(RemoteError):
    """The endpoint took a connection (or not) but sent no answer within the timeout."""

    def __init__(
        self, remote: str, endpoint: str, seconds: float, tries: int, setting: str
    ) -> None:
        tried = f" ({tries} tries)" if tries > 1 else ""
        super().__init__(
            remote,
            f"no answer from {endpoint} within {seconds:g} s{tried}",
            f"is the server up? a slow one needs a longer {setting}",
        )
        self.endpoint = endpoint
        self.seconds = seconds
        self.tries = tries


class RemoteAuthError(RemoteError):
    """Credentials are missing or refused by the server."""

    def __init__(self, remote: str, detail: str) -> None:
        super().__init__(
            remote,
            f"access refused: {detail}",
            "credentials come from the standard AWS chain: AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE or ~/.aws",
        )


class RemoteBucketMissing(RemoteError):
    """The configured bucket does not exist on the server."""

    def __init__(self, remote: str, bucket: str) -> None:
        super().__init__(
            remote, f"bucket {echoed(bucket)} does not exist", "create it, or fix 'cas remote add'"
        )
        self.bucket = bucket


# --- exit 1: the command ran and found a problem ------------------------------------------------


class ProblemError(CasError):
    """The command ran and found a problem."""

    exit_code = EXIT_PROBLEM


class BlobNotFound(ProblemError):
    """A digest the store does not hold."""

    def __init__(self, digest: str) -> None:
        super().__init__(f"{digest}: not in the store")
        self.digest = digest


class CorruptBlob(ProblemError):
    """Stored bytes that do not decode, or decode to content with another digest."""

    def __init__(self, digest: str, problem: str) -> None:
        super().__init__(f"{digest}: corrupt in the store: {problem}")
        self.digest = digest
        self.problem = problem


class NotFound(ProblemError):
    """A named thing (pack, scope, pin, remote) that does not exist."""

    def __init__(self, what: str, name: str, hint: str = "") -> None:
        msg = f"{what} {echoed(name)} not found"
        if hint:
            msg += f": {hint}"
        super().__init__(msg)
        self.what = what
        self.name = name


class BudgetError(ProblemError):
    """Files pinned as required exceed a pack's maximum token budget on their own."""

    def __init__(self, scope: str, budget_max: int, required: list[tuple[str, int]]) -> None:
        total = sum(t for _, t in required)
        listed = ", ".join(f"{p} ({t} tokens)" for p, t in required)
        super().__init__(
            f"pack {echoed(scope)}: required files alone need {total} tokens, over the max of "
            f"{budget_max}: {listed}; raise the budget or drop 'required' from a rule"
        )
        self.scope = scope
        self.budget_max = budget_max
        self.required = required


class LoadBudgetError(ProblemError):
    """A load's header and list of files alone are over its maximum token budget."""

    def __init__(self, name: str, budget_max: int, needed: int) -> None:
        super().__init__(
            f"load {echoed(name)}: its header and list of files alone need {needed:,} tokens, "
            f"over the max of {budget_max:,}; ask with a larger budget (--budget)"
        )
        self.name = name
        self.budget_max = budget_max
        self.needed = needed


class DistillBudgetError(ProblemError):
    """A recent-changes document's least content (its summary and the newest commit) is over
    the token budget on its own."""

    def __init__(self, budget: int, needed: int) -> None:
        super().__init__(
            f"the recent-changes document needs {needed} tokens for its summary and the newest "
            f"commit alone, over the budget of {budget}; raise the budget"
        )
        self.budget = budget
        self.needed = needed


class VerifyFailed(ProblemError):
    """Verification found problems; the report holds them."""

    def __init__(self, count: int) -> None:
        super().__init__(f"verify failed: {count} problem{'s' if count != 1 else ''}")
        self.count = count


class RemoteRefused(ProblemError):
    """Objects from a remote that are missing or fail their checks; none of them was stored."""

    def __init__(
        self, remote: str, problems: list[tuple[str, str]], total: int | None = None
    ) -> None:
        # ``total`` counts every refused object when ``problems`` holds only the first ones.
        total = max(total or 0, len(problems))
        shown = "; ".join(f"{what}: {why}" for what, why in problems[:3])
        more = f"; and {total - 3} more" if total > 3 else ""
        count = f"{total} object{'s' if total != 1 else ''}"
        super().__init__(f"remote {echoed(remote)}: refused {count}: {shown}{more}")
        self.remote = remote
        self.problems = problems
        self.total = total


class StoreInconsistent(ProblemError):
    """gc's consistency check failed: a root names a blob the store lacks, or a root manifest
    does not decode. That is data loss to report (run 'cas verify'), not a store to prune."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        shown = "; ".join(f"{what}: {why}" for what, why in problems[:3])
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        super().__init__(
            f"gc refused, nothing was deleted: the store fails its consistency check: "
            f"{shown}{more} (run 'cas verify' for the full report)"
        )
        self.problems = problems


class LeaseHeld(ProblemError):
    """A pack in progress holds a lease; gc waited for it, then refused rather than race it."""

    def __init__(self, holders: list[str], waited_s: float) -> None:
        super().__init__(
            f"gc refused, nothing was deleted: still in progress after waiting {waited_s:.0f} s: "
            f"{', '.join(holders)} (retry when it finishes, or raise --lease-wait)"
        )
        self.holders = holders
        self.waited_s = waited_s


class LeaseLost(ProblemError):
    """A lease went stale while its holder ran (stopped, or its heartbeat could not be written),
    so a gc may have pruned what the holder was about to reference."""

    def __init__(self, kind: str, lease_id: str) -> None:
        super().__init__(
            f"the {kind} lease {lease_id} went stale while it ran (process stopped or store "
            "unwritable): a concurrent gc may have pruned its blobs; nothing was published, "
            "rerun it"
        )
        self.kind = kind
        self.lease_id = lease_id


class StoreBusy(ProblemError):
    """Compaction needs the store to itself and another process has it open."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"store {_path(path)} is in use by another process: compaction needs it to itself; "
            "retry in a maintenance window"
        )
        self.path = path


class RemoteBusy(ProblemError):
    """A remote gc and a push, pull or verify (or two gcs) met; the later one stepped back."""

    def __init__(self, remote: str, holder: str, age_s: float, count: int) -> None:
        others = f" and {count - 1} more" if count > 1 else ""
        super().__init__(
            f"remote {echoed(remote)} is busy: {holder}{others} holds its lock (written "
            f"{age_s:.0f} s ago); nothing was changed, retry when it finishes or wait for it with "
            "CAS_REMOTE_LOCK_WAIT=10m (a lock of a process that died goes stale after 10 "
            "minutes)"
        )
        self.remote = remote
        self.holder = holder


class RemoteGcRefused(ProblemError):
    """A remote gc found something it cannot judge safely and stopped before deleting."""

    def __init__(self, remote: str, problem: str) -> None:
        super().__init__(f"remote {echoed(remote)}: gc refused, nothing was deleted: {problem}")
        self.remote = remote
        self.problem = problem


class Interrupted(CasError):
    """Ctrl-C: the current transaction was rolled back."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self) -> None:
        super().__init__("interrupted: the last batch was rolled back; the store is consistent")


class MemoryConflict(ProblemError):
    """Other writers kept changing a memory while a change to it was being made."""

    def __init__(self, scope: str, tries: int) -> None:
        super().__init__(
            f"memory {echoed(scope)} kept changing under this change ({tries} tries); nothing was "
            "lost: retry"
        )
        self.scope = scope


class DeciderFailed(ProblemError):
    """The command that decides what a memory compaction keeps gave no usable answer."""

    def __init__(self, log: str, problem: str) -> None:
        super().__init__(
            f"the --llm command's answer for {log} is unusable: {problem}; nothing was changed "
            '(it must answer JSON: {"decisions": [{"index", "decision", "text"?}]})'
        )
        self.log = log
        self.problem = problem
