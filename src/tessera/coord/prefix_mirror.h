// PrefixMirror: keeps an owner's copy of the files under one lock-service prefix equal to what
// the service holds, and tells the owner every change in revision order. The schema store
// (catalog/schema_store.h) is its first owner; the tablet map will be the next.
//
// How (docs/coordination.md, "Mirroring a prefix"):
//   - Start(session) lists the prefix at some revision R, delivers the difference between the
//     listing and the mirror's view (puts for new or changed files, deletes for files gone),
//     calls OnSynced, then watches the prefix from R + 1.
//   - Each watch event is delivered once, in revision order, with the file's full state: a put
//     carries the file's create_revision too (taken from the event when the file is new, from
//     the view when the mirror saw it created, else read back with Get).
//   - The view remembers, per name, the revision of the last change delivered (deletes
//     included), and the revision of the last listing: anything not newer is not delivered
//     again, so duplicates around a reconnection and replays after a listing are dropped, and
//     a stale put never brings a deleted file back.
//   - A reset re-lists and delivers the difference, so that the owner's view equals the store:
//     on kReset (the history the watch needed is gone), after a delivery the owner refused
//     (before the next event is delivered), on Resync(), and on Start() with a new session
//     (after the session was lost, or the backend restarted: revisions from before mean
//     nothing then, so every listed file is delivered again).
//   - A change the owner made itself (a compare-and-set it won) can be delivered at once with
//     DeliverLocalPut / DeliverLocalDelete, so that the owner reads its own writes; the watch's
//     copy of the same change is then dropped as a duplicate.
//
// A delivery the owner fails (non-OK from OnPut/OnDelete/OnSynced) is not recorded in the view:
// the next listing delivers that file again. OK means "handled", including "looked at and
// skipped" (a malformed value): such a change is not delivered again unless it changes.
//
// Threading: deliveries are serialized by one mutex, held while the listener runs. They run on
// the lock service's watch thread (watch events, kReset), or on the thread that called Start,
// Resync or DeliverLocal*. The listener must not call back into the mirror. Start and Stop are
// called by the owner's controlling thread (not from a listener callback). Stop() destroys the
// watch (its callback is not running when Stop returns) and waits until no Resync and no
// SessionUse holds the session; afterwards the mirror delivers nothing until the next Start.
// Every other method is safe to call from any thread.
// Lock order: start_mu_, then deliver_mu_, then mu_.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/coord/lock_service.h"
#include "tessera/util/status.h"

namespace tessera::coord {

// A lock-service failure as the owner's caller sees it: the service's own InvalidArgument (a
// name or value over its limits) stays, as "<doing>: <message>"; anything else is the
// environment: Unavailable "lock service: <doing>: <status>".
Status LockServiceCallError(std::string_view doing, const Status& status);

// Why a change is delivered.
enum class MirrorCause {
  kListing,  // a (re)listing found it
  kWatch,    // the watch reported it
  kLocal,    // the owner made it (DeliverLocalPut / DeliverLocalDelete)
};

// The owner's side. Called one at a time (see Threading above).
class MirrorListener {
 public:
  virtual ~MirrorListener() = default;

  // `file` (under the prefix) was created or changed; every field is set.
  virtual Status OnPut(const FileInfo& file, MirrorCause cause) = 0;
  // `name` was deleted at `revision` (from a listing: the listing's revision; from
  // DeliverLocalDelete: the revision the owner gave). Only names the view holds are deleted.
  virtual Status OnDelete(const std::string& name, int64_t revision, MirrorCause cause) = 0;
  // A listing at `revision` has been delivered; `live` is every name the view now holds.
  // An owner that keeps things the mirror never told it of drops those not in `live` here.
  virtual Status OnSynced(int64_t revision, const std::set<std::string, std::less<>>& live) = 0;
  // The session expired: the watch has ended. The owner calls Start() with a new session.
  virtual void OnSessionExpired() = 0;
};

struct PrefixMirrorOptions {
  // The files mirrored: every name that starts with `prefix` (empty: every file).
  std::string prefix;
  // How errors and logs name what is mirrored ("listing <what>"), e.g. "the schema".
  std::string what = "the files";
  // Log lines start with this, e.g. "cluster schema".
  std::string log_name = "prefix mirror";
};

struct PrefixMirrorStats {
  uint64_t failures = 0;  // deliveries the listener refused, and reads of a record that failed
  uint64_t resyncs = 0;   // listings delivered with every delivery accepted
};

class PrefixMirror {
 public:
  // A session borrowed for the owner's own calls (its compare-and-set writes) while the mirror
  // runs; Stop() waits until every SessionUse has ended.
  class SessionUse {
   public:
    SessionUse(SessionUse&& other) noexcept : mirror_(other.mirror_), session_(other.session_) {
      other.mirror_ = nullptr;
    }
    SessionUse(const SessionUse&) = delete;
    SessionUse& operator=(const SessionUse&) = delete;
    SessionUse& operator=(SessionUse&&) = delete;
    ~SessionUse();
    Session* operator->() const { return session_; }
    Session* get() const { return session_; }

   private:
    friend class PrefixMirror;
    SessionUse(PrefixMirror* mirror, Session* session) : mirror_(mirror), session_(session) {}
    PrefixMirror* mirror_;
    Session* session_;
  };

  // `listener` must outlive the mirror. InvalidArgument for a bad prefix.
  static StatusOr<std::unique_ptr<PrefixMirror>> Create(MirrorListener* listener,
                                                        PrefixMirrorOptions options);
  // Stops.
  ~PrefixMirror();
  PrefixMirror(const PrefixMirror&) = delete;
  PrefixMirror& operator=(const PrefixMirror&) = delete;

  // Stops if running, lists and delivers (see above), then watches. `session` must stay alive
  // until Stop() (or the destructor) returns. On error the mirror is stopped; what was
  // delivered stays delivered. Errors: the listing's or the watch's LockServiceCallError
  // ("listing <what>", "watching <what>"), or the first delivery the listener refused.
  Status Start(Session* session);
  // Ends the watch and waits for users of the session (see Threading). Idempotent.
  void Stop();
  // True between a successful Start and Stop, unless the session expired.
  bool running() const;

  // The session, while running; FailedPrecondition otherwise.
  StatusOr<SessionUse> UseSession();

  // Lists and delivers the difference now (kReset does it; an owner may after a failure).
  // FailedPrecondition when not running; else as Start.
  Status Resync();

  // Delivers a put the owner made (`file` as Put returned it) unless the view already has that
  // revision of the name or a newer one (then OK). Returns the listener's status.
  Status DeliverLocalPut(const FileInfo& file);
  // Delivers a delete the owner made, ordered just after `revision` (the deleted file's last
  // mod_revision when the delete's own revision is unknown), unless the view holds no live file
  // of that name or a newer change to it. Returns the listener's status.
  Status DeliverLocalDelete(const std::string& name, int64_t revision);

  PrefixMirrorStats GetStats() const;

 private:
  // What the view holds for one name.
  struct Entry {
    int64_t revision = 0;  // of the last change delivered (put or delete)
    bool live = false;     // false: deleted at `revision`
    FileInfo file;         // live: the file as delivered
  };

  PrefixMirror(MirrorListener* listener, PrefixMirrorOptions options)
      : listener_(listener), options_(std::move(options)) {}

  void StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(start_mu_);
  // Lists with `session` and delivers the difference; returns the listing's revision.
  StatusOr<int64_t> SyncWith(Session* session);
  void OnWatchEvent(Session* session, const WatchEvent& event);
  Status DeliverWatchEvent(Session* session, const WatchEvent& event);
  Status DeliverPutLocked(const FileInfo& file, MirrorCause cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(deliver_mu_);
  Status DeliverDeleteLocked(const std::string& name, int64_t revision, MirrorCause cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(deliver_mu_);
  void CountFailure();
  void EndUse();

  MirrorListener* const listener_;
  const PrefixMirrorOptions options_;

  // Serializes Start and Stop; never taken by a delivery.
  absl::Mutex start_mu_;

  // Serializes deliveries; held while the listener runs.
  absl::Mutex deliver_mu_;
  std::map<std::string, Entry, std::less<>> view_ ABSL_GUARDED_BY(deliver_mu_);
  // The revision of the last listing delivered: watch events at or below it are in it.
  int64_t floor_ ABSL_GUARDED_BY(deliver_mu_) = 0;
  // A delivery failed: the next watch event re-lists first.
  bool needs_resync_ ABSL_GUARDED_BY(deliver_mu_) = false;

  // Guards the session, the watch and the statistics.
  mutable absl::Mutex mu_;
  Session* session_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::unique_ptr<Watch> watch_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool expired_ ABSL_GUARDED_BY(mu_) = false;
  int in_use_ ABSL_GUARDED_BY(mu_) = 0;  // SessionUses and SyncWith calls holding session_
  PrefixMirrorStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::coord
