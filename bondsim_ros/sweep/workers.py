"""Where independent simulations run: this process, a local pool of spawned processes, or a Dask
cluster, behind one :class:`Workers` value that ``sweep`` and ``fit`` both use.

A worker process loads a compiled model once (:func:`worker_model`, from the generated-code
cache the calling process filled) and keeps it, and whatever else a task builds on it
(:func:`worker_state`: a fit's problem with its reusable solver), for every task it is given.
A task is a module-level function and picklable arguments: the pool and Dask send it by name.

Ctrl-C: the pool's workers ignore SIGINT (the terminal sends it to the whole process group);
the calling process ends them (they hold nothing that needs a clean exit: SIGTERM, SIGKILL
after a few seconds) or cancels the cluster's tasks, and the KeyboardInterrupt goes on to the
caller. A worker that dies (killed, out of memory) stops the others too: :class:`WorkerDied`,
after the results that came back.
"""
from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path


class WorkersError(ValueError):
    """Bad ``jobs`` or ``scheduler``: nothing was started. ``arg`` names the argument."""

    def __init__(self, message: str, arg: str):
        super().__init__(f"{arg}: {message}")
        self.message, self.arg = message, arg


class WorkerDied(RuntimeError):
    """A worker ended while it had tasks (killed, out of memory, unable to start): the tasks not
    finished are lost, the workers stopped. The results ``run`` reported before it stay valid."""


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use (a container, taskset)
    except AttributeError:
        return os.cpu_count() or 1


# -- in a worker ----------------------------------------------------------------------------------

_LOADED: dict = {}  # model spec -> (CompiledModel, ModelEntry or None), per worker process
_LOAD_LOCK = threading.Lock()  # a Dask worker with threads shares the process
_STATE = threading.local()  # per thread: what a task keeps for the next (a solver is one thread's)
STATE_KEPT = 4  # per thread, the newest: a long-lived Dask worker serves fit after fit


def load_model(spec: str, use_cache: bool = True):
    """(CompiledModel, its built-in ModelEntry or None) of ``spec``, as ``bondsim-ros simulate``
    finds it: from the build record when the model was built before (no sympy), else built
    and compiled (and recorded, so that the workers that load it next find it)."""
    from bondsim_ros.models import buildcache

    resolved = buildcache.resolve(spec, use_cache=use_cache)
    return resolved.compile(), resolved.entry


def model_spec(spec) -> str:
    """The model as the workers load it: a model file by its absolute path (a worker's current
    folder may differ), a built-in model by its name."""
    spec = str(spec)
    path = Path(spec)
    if path.suffix in (".yaml", ".yml", ".py") and path.exists():
        return str(path.resolve())
    return spec


def worker_model(spec: str):
    """This process's copy of ``spec``'s model, loaded on first use."""
    with _LOAD_LOCK:
        if spec not in _LOADED:
            _LOADED[spec] = load_model(spec)
        return _LOADED[spec]


def worker_state(key, make):
    """This thread's value for ``key``, made by ``make()`` on first use (the newest
    :data:`STATE_KEPT` are kept)."""
    kept = getattr(_STATE, "kept", None)
    if kept is None:
        kept = _STATE.kept = {}
    if key not in kept:
        while len(kept) >= STATE_KEPT:
            del kept[next(iter(kept))]
        kept[key] = make()
    return kept[key]


# Libraries that start a thread per core for their linear algebra: a worker is one of the
# processes sharing the cores, and their spinning threads slowed a 2-process pool below one
# process (as Dask's nanny, one thread each unless the user's environment says otherwise). Set
# while the pool spawns its processes (they inherit the environment then).
ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def _one_thread_each():
    added = [name for name in ONE_THREAD if name not in os.environ]
    for name in added:
        os.environ[name] = "1"
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _pool_worker_init() -> None:
    import signal

    # Ctrl-C reaches the whole process group: the parent alone handles it (stops the workers)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# -- in the calling process -----------------------------------------------------------------------

def _refused_at_once(scheduler) -> None:
    """WorkersError when a tcp:// scheduler's address is malformed or nothing listens there:
    Dask's Client retries a refused connection until its timeout, a wait that tells the user
    nothing more. Anything else (no answer, a name to resolve, another protocol) is left to
    :func:`dask_client`."""
    import socket
    from urllib.parse import urlsplit

    if not isinstance(scheduler, str) or not scheduler.startswith("tcp://"):
        return
    try:
        where = urlsplit(scheduler)
        host, port = where.hostname, where.port
    except ValueError as exc:  # a port out of 0..65535 or not a number
        raise WorkersError(f"cannot connect to the Dask scheduler {scheduler}: {exc} (the address is "
                           f"tcp://HOST:PORT, PORT 1..65535)", "scheduler") from None
    if not host or port is None:
        return
    try:
        socket.create_connection((host, port), timeout=2.0).close()
    except ConnectionRefusedError as exc:
        raise WorkersError(f"cannot connect to the Dask scheduler {scheduler}: {exc.strerror or exc} (nothing "
                           f"listens there: is the scheduler running?)", "scheduler") from None
    except OSError:
        return


# How long making a Client may take: connecting and Dask's handshake. Dask's own timeout covers
# the connection alone: a port that accepts and never answers (the dashboard's HTTP port) kept
# Client(address, timeout=...) waiting for good.
CONNECT_TIMEOUT = 10.0
PORT_HINT = "is it the scheduler's port (8786 by default), not its dashboard's (8787) or another service's?"


def _first_words(scheduler) -> str:
    """The first line a service at ``scheduler`` sends on a connection of its own, if it sends
    text at once (an HTTP server's error): what answered the Client, for the refusal."""
    import socket
    from urllib.parse import urlsplit

    if not isinstance(scheduler, str):  # a cluster object: nothing to ask
        return ""
    try:
        where = urlsplit(scheduler)
        with socket.create_connection((where.hostname, where.port), timeout=1.0) as conn:
            conn.settimeout(1.0)
            head = conn.recv(200)
    except (OSError, ValueError, TypeError):
        return ""
    line = head.split(b"\r\n", 1)[0].split(b"\n", 1)[0]
    return line.decode("ascii") if line and line.isascii() and line.decode("ascii").isprintable() else ""


def dask_client(scheduler, timeout: float | None = None):
    """(Client, whether it was opened here) for a scheduler address or a Client. WorkersError,
    naming the address, when no Client is made within ``timeout`` seconds (default
    :data:`CONNECT_TIMEOUT`) or making it fails in any way (something else answered)."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise WorkersError("a Dask scheduler needs dask.distributed: pip install 'bondsim_ros[cluster]' "
                           "(or pip install 'dask[distributed]')", "scheduler") from None
    if isinstance(scheduler, Client):
        return scheduler, False
    _refused_at_once(scheduler)
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    made: dict = {}
    lock = threading.Lock()

    def connect():
        try:
            client = Client(scheduler, timeout=f"{timeout}s")
        except BaseException as exc:  # noqa: BLE001 - reported by the caller, whatever it is
            made["error"] = exc
            return
        with lock:
            late = made.get("abandoned", False)
            made["client"] = client
        if late:  # the caller gave up waiting: nobody will close it
            client.close()

    # the Client made in a thread of its own, so that the wait has a deadline whatever it waits on
    thread = threading.Thread(target=connect, name="bondsim-dask-connect", daemon=True)
    thread.start()
    # A thread that gave up waiting stays blocked in Client() with Dask's IO-loop thread and its
    # socket until that returns: a command ends with it; a long-lived caller retrying a dead
    # address keeps one such pair per attempt
    interrupted = True
    try:
        thread.join(timeout)
        interrupted = False
    finally:  # also on Ctrl-C: a Client made after this is closed by its thread
        with lock:
            client = made.get("client")
            made["abandoned"] = client is None
        if interrupted and client is not None:  # made just before the interrupt: nobody else has it
            client.close()
    if client is not None:
        return client, True
    error = made.get("error")
    if error is None:
        raise WorkersError(f"cannot connect to the Dask scheduler {scheduler}: no answer within {timeout:g} s "
                           f"({PORT_HINT})", "scheduler")
    if isinstance(error, (OSError, TimeoutError)):
        raise WorkersError(f"cannot connect to the Dask scheduler {scheduler}: {error}", "scheduler")
    said = _first_words(scheduler)
    what = f"{type(error).__name__}: {error}"
    what = what if len(what) <= 160 else what[:157] + "..."
    answer = f"the service there answered {said!r}, which is not Dask's protocol" if said else \
        f"making the client failed ({what})"
    raise WorkersError(f"cannot connect to the Dask scheduler {scheduler}: {answer}; {PORT_HINT}", "scheduler")


def check_jobs(jobs) -> int:
    """``jobs`` as a count of local processes: None or 0 -> every usable core; WorkersError
    for anything but a whole number >= 0."""
    if jobs is None:
        return default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) and not (isinstance(jobs, float) and jobs.is_integer()):
        raise WorkersError(f"must be a whole number, got {jobs!r}", "jobs")
    jobs = int(jobs)
    if jobs < 0:
        raise WorkersError(f"must be >= 0 (0: every usable core), got {jobs}", "jobs")
    return jobs or default_jobs()


def _signals(procs) -> set:
    """The names of the signals that ended the processes ``procs`` (ended and joined)."""
    import signal

    found = set()
    for proc in procs:
        code = proc.exitcode
        if code is not None and code < 0:
            try:
                found.add(signal.Signals(-code).name)
            except ValueError:
                found.add(f"signal {-code}")
    return found


def _signal_cause(signals: set) -> str:
    """What the signals that ended workers say of the cause: SIGKILL is the kernel's out-of-memory
    killer or a user's kill -9; a fault signal is a crash in compiled code (a model's kernels, the
    solver core)."""
    faults = sorted(signals & {"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"})
    others = sorted(signals - set(faults))
    said = []
    if faults:
        said.append(f"crashed with {', '.join(faults)}: a fault in compiled code")
    if others:
        said.append(f"killed by {', '.join(others)}" + (": out of memory, or killed by hand" if "SIGKILL" in others
                                                        else ""))
    return "; ".join(said)


# How long ending a pool waits for its processes after SIGTERM, then after SIGKILL, and for the
# executor's thread: seconds each, far above what a process takes to die
END_GRACE = 3.0


def _end_pool(pool) -> None:
    """End a ProcessPoolExecutor's processes and its thread without waiting on either for good.
    The executor has no way to stop a running task: its worker processes are ended (private, but
    the only handle), and it then fails the pending futures itself."""
    import multiprocessing.connection
    import time

    procs = list((getattr(pool, "_processes", None) or {}).values())
    for end in ("terminate", "kill"):
        alive = [proc for proc in procs if proc.exitcode is None]
        for proc in alive:
            getattr(proc, end)()
        deadline = time.monotonic() + END_GRACE
        while alive and time.monotonic() < deadline:  # (wait returns when any one has ended)
            ended = multiprocessing.connection.wait([proc.sentinel for proc in alive],
                                                    max(0.0, deadline - time.monotonic()))
            alive = [proc for proc in alive if proc.sentinel not in ended]
        if not alive:
            break
    for proc in procs:
        proc.join(0)  # reaped: their exit codes are known after this
    # A worker ended while it sent a result leaves part of a message in the result pipe, and the
    # executor's thread would wait for the rest for good (and shutdown(wait=True) with it), since
    # this process holds the pipe's write end too. Closed here, the thread reads the pipe's end and
    # fails the pool: with the workers gone nothing else writes to it.
    results = getattr(pool, "_result_queue", None)
    thread = getattr(pool, "_executor_manager_thread", None)
    if results is not None:
        results._writer.close()
    pool.shutdown(wait=False, cancel_futures=True)
    if thread is not None:
        thread.join(END_GRACE)


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM held while the block runs, then handled as they would have been: a
    second Ctrl-C while a pool is being ended would leave it half ended (its thread then keeps the
    interpreter from exiting). Only the main thread handles signals; elsewhere nothing is held."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list = []
    held = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler):  # a Python handler (the default Ctrl-C one too): it raises in this thread
            held[sig] = handler
            signal.signal(sig, lambda number, frame: caught.append((number, frame)))
    try:
        yield
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)
        for number, frame in caught[:1]:  # the first is enough: it ends the command
            held[number](number, frame)


class Workers:
    """Runs tasks ``fn(*args)``: in this process (``jobs=1``), on a pool of ``jobs`` spawned
    processes, or on the Dask cluster of ``scheduler`` (an address ``tcp://host:8786``, a
    ``dask.distributed`` Client or a cluster object). ``size``: how many run at once;
    ``description``: where they run, for a report. Use it as a context manager: leaving it
    normally waits for the pool to end; leaving it by an exception (Ctrl-C) ends the pool's
    processes and cancels the cluster's tasks at once."""

    def __init__(self, jobs: int = 1, scheduler=None, log=None):
        self._pool = self._client = None
        self._own = self._ended = self._told_empty = False
        self._pending: list = []
        self._log = log  # log(message): a note while tasks wait (a cluster without workers)
        self._finished = 0  # tasks that came back, this value's
        if scheduler is not None:
            self._client, self._own = dask_client(scheduler)
            self._count_threads()
            return
        jobs = int(jobs)
        if jobs < 1:
            raise WorkersError(f"must be at least 1, got {jobs}", "jobs")
        self.size = jobs
        if jobs == 1:
            self.description = "1 job (this process)"
            return
        import concurrent.futures as cf
        import multiprocessing

        # spawn: a fresh interpreter per worker (no copy of this process's threads, locks or loaded
        # libraries, as fork would make); each imports the package and loads the model once
        self._pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_pool_worker_init)
        self.description = f"{jobs} jobs"

    def _count_threads(self) -> int:
        """The cluster's worker threads now (``size`` at least 1: the chunks to cut)."""
        threads = sum(self._client.nthreads().values())
        self.size = max(1, threads)
        self.description = (f"Dask at {self._client.scheduler.address}, "
                            + (f"{threads} worker thread{'s' if threads != 1 else ''}" if threads else "no workers"))
        return threads

    def _tell_if_empty(self) -> bool:
        """Whether the cluster has no worker now; says once that its tasks wait for one."""
        if self._count_threads():
            return False
        if not self._told_empty:
            self._told_empty = True
            note = (f"the Dask cluster at {self._client.scheduler.address} has no workers yet: waiting for them "
                    f"(start some with `dask worker {self._client.scheduler.address}`; Ctrl-C stops)")
            if self._log is not None:
                self._log(note)
            else:
                import sys

                print(f"[bondsim] {note}", file=sys.stderr)
        return True

    @property
    def remote(self) -> bool:
        """Whether tasks run outside this process."""
        return self._pool is not None or self._client is not None

    def share(self, value):
        """``value`` as tasks should be given it when many get the same (a fit's problem): on a
        Dask cluster sent to every worker once (a task given the handle finds it there), else
        ``value`` itself."""
        if self._client is None:
            return value
        if self._tell_if_empty():  # scatter gives up after its timeout when there is no worker to send to
            self._client.wait_for_workers(1)
            self._count_threads()
        return self._client.scatter(value, broadcast=True, hash=False)

    def warm_up(self, fn, *args) -> None:
        """Start ``fn(*args)`` once per worker without waiting (a model load, while this process
        computes something else); what it returns or raises is dropped."""
        if self._pool is not None:
            with _one_thread_each():
                self._pending += [self._pool.submit(fn, *args) for _ in range(self.size)]
        elif self._client is not None:
            self._pending += [self._client.submit(fn, *args, pure=False) for _ in range(self.size)]

    def run(self, fn, tasks, on_result=None) -> list:
        """``[fn(*args) for args in tasks]``, run on the workers; ``on_result(i, value)`` as each
        finishes (in any order). A task's exception is raised here (the others are cancelled);
        on KeyboardInterrupt the workers are stopped (:meth:`stop`) before it goes on."""
        if self._ended:
            raise RuntimeError("these workers were stopped or closed")
        tasks = list(tasks)
        out: list = [None] * len(tasks)
        if not self.remote:
            for i, args in enumerate(tasks):
                out[i] = fn(*args)
                if on_result is not None:
                    on_result(i, out[i])
            return out
        if self._pool is not None:
            import concurrent.futures as cf

            futures = []
            try:
                with _one_thread_each():  # the pool spawns its processes as tasks come
                    futures = [self._pool.submit(fn, *args) for args in tasks]
                index = {f: i for i, f in enumerate(futures)}
                for fut in cf.as_completed(futures):
                    i = index[fut]
                    out[i] = fut.result()
                    self._finished += 1
                    if on_result is not None:
                        on_result(i, out[i])
            except cf.process.BrokenProcessPool as exc:
                procs = list((getattr(self._pool, "_processes", None) or {}).values())
                self.stop()  # (joins them: their exit codes are known after it)
                # not SIGTERM: the executor ends the other workers with it once one has died
                signals = _signals(procs) - {"SIGTERM"}
                if signals:
                    raise WorkerDied(f"a worker process died ({_signal_cause(signals)})") from None
                if self._finished:  # it had run tasks: it started as it should
                    raise WorkerDied("a worker process died (it exited while running a task)") from None
                # none ever finished: most often unable to start, as each spawned process imports the
                # calling script again, which then reaches this pool again
                raise WorkerDied(f"a worker process died ({exc}): killed, out of memory, or it could not start. "
                                 f"Each worker imports the calling script again, so a script that runs a sweep or "
                                 f"fit with jobs > 1 must do so under `if __name__ == \"__main__\":`; jobs=1 runs "
                                 f"in this process") from None
            except BaseException:
                # not cancelling the futures first: in Python 3.11 the executor's thread then
                # raises on them; ending the processes makes it fail them itself
                self.stop()
                raise
            return out
        from dask.distributed import KilledWorker, as_completed

        futures = []
        try:
            self._tell_if_empty()  # the tasks wait on the scheduler until a worker comes
            # pure=False: identical tasks of two runs are still two computations
            futures = [self._client.submit(fn, *args, pure=False) for args in tasks]
            index = {f.key: i for i, f in enumerate(futures)}
            for fut in as_completed(futures):
                i = index[fut.key]
                out[i] = fut.result()
                self._finished += 1
                if on_result is not None:
                    on_result(i, out[i])
        except KilledWorker:
            self._client.cancel(futures)
            raise WorkerDied("a Dask worker died running a task, and so did each worker the scheduler gave it to "
                             "next (out of memory, or killed: see the workers' logs)") from None
        except BaseException:
            self._client.cancel(futures)
            raise
        self._count_threads()  # the workers that ran them (some may have joined meanwhile)
        return out

    def stop(self) -> None:
        """End at once: the pool's processes terminated, the cluster's tasks of this value
        cancelled (the cluster itself goes on). Bounded: a pool's end takes a few seconds at
        most; a Ctrl-C or SIGTERM meanwhile waits until it is over, then is raised."""
        self._ended = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            with _signals_held():
                _end_pool(pool)
        if self._client is not None:
            if self._pending:
                self._client.cancel(self._pending)
            self._close_client()

    def close(self) -> None:
        """End once the tasks given have finished."""
        self._ended = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=True)
        if self._client is not None:
            self._close_client()

    def _close_client(self) -> None:
        client, self._client = self._client, None
        self._pending = []
        if self._own:
            client.close()

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.close()
        else:
            self.stop()
