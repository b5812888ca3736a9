// Whether gRPC runs its deferred callbacks on an executor thread or on the thread at hand.
//
// gRPC's C++ callback server (1.51, Debian 12) never calls a streaming reactor's OnDone where
// the call finished: ServerCallbackCall::ScheduleOnDone hands it to gRPC's internal executor,
// a pool of threads of its own, so every ReadRows, MutateRows and SampleRowKeys call costs one
// more thread wake-up and context switch after its answer was sent (and, under load, the
// transport's combiner offloads work there too). The executor is an internal part of gRPC's
// core (src/core/lib/iomgr/executor.h, not installed), but libgrpc exports it, and gRPC's own
// tests turn its threads off: every closure given to it then runs on the thread that gave it,
// when that thread's current ExecCtx flushes, i.e. before the callback that scheduled it
// returns to gRPC.
//
// Measured (`tessera bench`, workload C, 50,000 records, one node): server CPU per one-row read
// 62-69 us with the executor's threads, 53-58 us without; see docs/server.md ("Threads").
//
// What it requires of us: nothing that gRPC defers may block for long, since it runs on a
// gRPC thread. OnDone and OnCancel of every reactor here only release memory or set a flag.
// gRPC's native DNS resolver (not the default: c-ares is) also runs getaddrinfo there.
//
// Thread-safety: process-wide. Call it before the process's first gRPC server or channel is
// made (it initialises gRPC, which then stays initialised until the process exits); calling
// it again with the other value switches the executor while gRPC runs, which gRPC supports
// (its threads are joined or started) but no server here does.
#pragma once

namespace tessera::server {

// threads = false: gRPC's executor runs closures inline (the default of `tessera serve`);
// true: on its own pool of threads (gRPC's default).
void SetGrpcExecutorThreads(bool threads);

}  // namespace tessera::server
