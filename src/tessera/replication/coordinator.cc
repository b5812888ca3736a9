#include "tessera/replication/coordinator.h"

#include <algorithm>
#include <set>
#include <utility>

#include "tessera/catalog/metadata_table.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/replication/nearest_replica.h"
#include "tessera/replication/quorum_read.h"
#include "tessera/util/logging.h"
#include "tessera/v1/replica.pb.h"

namespace tessera::replication {
namespace {

void ToMessage(const model::Row& row, v1::RowMessage* out) {
  out->set_key(row.key);
  for (const model::Cell& c : row.cells) {
    v1::CellMessage* m = out->add_cells();
    m->set_family(c.family);
    m->set_qualifier(c.qualifier);
    m->set_timestamp_micros(c.timestamp_micros);
    m->set_value(c.value);
    for (const std::string& label : c.labels) m->add_labels(label);
  }
}

model::Row FromMessage(const v1::RowMessage& m) {
  model::Row row;
  row.key = m.key();
  row.cells.reserve(static_cast<size_t>(m.cells_size()));
  for (const v1::CellMessage& c : m.cells()) {
    row.cells.push_back(model::Cell{c.family(), c.qualifier(), c.timestamp_micros(), c.value(),
                                    {c.labels().begin(), c.labels().end()}});
  }
  return row;
}

void SetStatus(const Status& s, bool maybe_applied, v1::ForwardStatus* out) {
  out->set_code(static_cast<int>(s.code()));
  out->set_message(std::string(s.message()));
  out->set_maybe_applied(!s.ok() && maybe_applied);
}

Status GetStatus(const v1::ForwardStatus& s, bool* maybe_applied) {
  *maybe_applied = s.maybe_applied();
  return Status(static_cast<absl::StatusCode>(s.code()), s.message());
}

}  // namespace

// One operation on one tablet. Built by the coordinator that took the request (with `encode`
// and `decode`, to send it on) or by the primary serving a forwarded one.
struct Coordinator::Op : std::enable_shared_from_this<Coordinator::Op> {
  TableSnapshot table;
  uint64_t tablet_id = 0;
  uint64_t epoch = 0;  // as the sender knew it (forwarded), or the configuration's
  bool is_read = false;
  bool idempotent = false;
  WriteLevel write_level = WriteLevel::kQuorum;
  ReadLevel read_level = ReadLevel::kPrimary;
  std::string dc;
  int64_t deadline_us = 0;
  bool client_deadline = false;  // deadline_us is the client's, not the node's default
  std::string method;
  // Runs the operation on this node's LocalTableAccess, keeping its result.
  std::function<Status()> run_local;
  // The request for the primary, for a target.
  std::function<std::string(const v1::ForwardTarget&)> encode;
  // Reads the primary's response: its status, and the result when OK.
  std::function<Status(const std::string& response, bool* maybe_applied)> decode;
  // Hands the outcome (and the kept result) to whoever asked.
  std::function<void(Status)> finish;
  // Set for a read at QUORUM: runs the attempt against the replicas of `config` instead of at
  // one target.
  std::function<void(const catalog::TabletConfig& config,
                     std::function<void(Status, bool)> done)>
      run_fanout;
  int attempts = 0;
  int64_t delay_us = 0;
  // A read at ONE: the replicas that failed a try of it (passed over by the next).
  std::set<std::string> avoid;
  // Runs a write's run_local when it runs here (null: inline; reads never set it).
  Executor* blocking = nullptr;
};

Coordinator::Coordinator(ReplicaNode* replicas, LocalTableAccess* access, RpcChannel* channel,
                         Executor* executor, Clock* clock, TableLookup lookup,
                         FilterCompiler compile, CoordinatorOptions options)
    : replicas_(replicas),
      access_(access),
      channel_(channel),
      clock_(clock),
      lookup_(std::move(lookup)),
      compile_(std::move(compile)),
      options_(std::move(options)),
      retries_(executor),
      locator_(std::make_unique<TabletLocator>(
          this, executor, clock, [lookup = lookup_]() -> StatusOr<TableSnapshot> {
            return lookup(std::string(catalog::kMetadataTable));
          })) {}

Coordinator::~Coordinator() { Stop(); }

void Coordinator::Stop() {
  // A retry waiting is answered: every try so far was refused or never sent, so none of them
  // applied a write. One running ends first; a later failure finishes with its own error.
  retries_.Close();
  locator_->Stop();
}

// ---------------------------------------------------------------------------------------------
// Running an operation

std::shared_ptr<Coordinator::Op> Coordinator::NewOp(TableSnapshot table, uint64_t tablet_id,
                                                    const AccessOptions& options,
                                                    std::string_view method, bool is_read) {
  auto op = std::make_shared<Op>();
  op->table = std::move(table);
  op->tablet_id = tablet_id;
  op->is_read = is_read;
  op->idempotent = is_read;  // a read changes nothing: a lost answer is asked again
  // The request's level, else the table's (its tessera_options, checked at CreateTable), else
  // the node's.
  const model::TableOptions& defaults = op->table->schema.options;
  op->write_level = options.write_level.value_or(
      ParseWriteLevel(defaults.write_consistency).value_or(options_.write_level));
  op->read_level = options.read_level.value_or(
      ParseReadLevel(defaults.read_consistency).value_or(options_.read_level));
  op->dc = options_.dc;
  op->client_deadline = options.timeout_us > 0;
  op->deadline_us = clock_->MonotonicMicros() +
                    (op->client_deadline ? options.timeout_us : options_.timeout_us);
  op->method = std::string(method);
  return op;
}

void Coordinator::Run(std::shared_ptr<Op> op) {
  op->delay_us = options_.retry_delay_us;
  RunOnce(std::move(op));
}

void Coordinator::RunOnce(std::shared_ptr<Op> op) {
  ++op->attempts;
  auto retry_or_finish = [this, op](Status s, bool maybe_applied) {
    const int64_t now = clock_->MonotonicMicros();
    const bool retryable =
        (absl::IsUnavailable(s) && (!maybe_applied || op->idempotent)) ||
        (absl::IsDeadlineExceeded(s) && op->idempotent);
    if (!s.ok() && retryable && op->attempts < options_.max_attempts &&
        now + op->delay_us < op->deadline_us) {
      const int64_t delay = op->delay_us;
      op->delay_us = std::min(2 * op->delay_us, options_.max_retry_delay_us);
      if (!RetryLater(op, delay)) Finish(op, std::move(s), maybe_applied);  // stopped
      return;
    }
    if (!s.ok() && retryable && op->client_deadline && absl::IsUnavailable(s) &&
        now + op->delay_us >= op->deadline_us) {
      // The client's time ran out while the tablet could not serve: say so, with the cause.
      s = absl::DeadlineExceededError(StrCat("deadline exceeded on tablet ", op->tablet_id,
                                             " of ", op->table->full_name, ": ", s.message()));
    }
    Finish(op, std::move(s), maybe_applied);
  };
  if (!catalog::IsClusterTabletId(op->tablet_id)) {
    // This node's own tablet (a table it had before it joined the cluster): served here.
    RunOn(op->blocking, [this, op] {
      Status s = op->run_local();
      Finish(op, std::move(s), false);
    });
    return;
  }
  std::optional<catalog::TabletConfig> config = replicas_->GetConfig(op->tablet_id);
  if (!config.has_value()) {
    retry_or_finish(absl::UnavailableError(StrCat(catalog::TabletName(op->tablet_id), " of ",
                                                  op->table->full_name,
                                                  " has no configuration here yet")),
                    false);
    return;
  }
  op->epoch = config->epoch;
  if (op->run_fanout) {
    op->run_fanout(*config, retry_or_finish);
    return;
  }
  std::string target = config->primary_endpoint();
  std::function<void(Status, bool)> done = retry_or_finish;
  if (op->is_read && op->read_level == ReadLevel::kOne) {
    // The nearest live replica (nearest_replica.h); one that failed a try is passed over by
    // the next, until none is left and the search starts again.
    target = NearestReplica(*config, channel_->self(), options_.locate, op->avoid);
    if (op->avoid.count(target) > 0) op->avoid.clear();
    done = [op, target, retry_or_finish](Status s, bool maybe_applied) {
      if (!s.ok()) op->avoid.insert(target);
      retry_or_finish(std::move(s), maybe_applied);
    };
  }
  if (target == channel_->self()) {
    RunOn(op->blocking,
          [this, op, done = std::move(done)]() mutable { RunHere(op, std::move(done)); });
    return;
  }
  v1::ForwardTarget t;
  t.set_table(op->table->full_name);
  t.set_tablet_id(op->tablet_id);
  t.set_epoch(op->epoch);
  t.set_write_level(static_cast<int>(op->write_level));
  t.set_read_level(static_cast<int>(op->read_level));
  t.set_coordinator_dc(op->dc);
  const int64_t remaining = std::max<int64_t>(1, op->deadline_us - clock_->MonotonicMicros());
  t.set_timeout_us(remaining);
  const int64_t timeout = std::min(remaining, options_.attempt_timeout_us);
  // The answer is decoded and handed on (finished, or retried later) on the thread it arrives
  // on: nothing on the way waits.
  channel_->CallInline(target, op->method, op->encode(t), timeout,
                 [op, done = std::move(done)](StatusOr<std::string> response) {
                   if (!response.ok()) {
                     // Lost on the way there or back: it may have run, unless it never left.
                     done(response.status(), !WasNotSent(response.status()));
                     return;
                   }
                   bool maybe_applied = true;
                   Status s = op->decode(*response, &maybe_applied);
                   done(std::move(s), maybe_applied);
                 });
}

bool Coordinator::RetryLater(const std::shared_ptr<Op>& op, int64_t delay_us) {
  return retries_.ScheduleAfter(
             delay_us, [this, op] { RunOnce(op); },
             [this, op] { Finish(op, absl::UnavailableError("the node is stopping"), false); }) !=
         0;
}

void Coordinator::Finish(std::shared_ptr<Op> op, Status status, bool maybe_applied) {
  if (!status.ok() && maybe_applied && !op->is_read &&
      (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status)) &&
      std::string(status.message()).find("may have been applied") == std::string::npos) {
    status = Status(status.code(), StrCat(status.message(), "; the write may have been applied"));
  }
  op->finish(std::move(status));
}

void Coordinator::RunHere(std::shared_ptr<Op> op,
                          std::function<void(Status status, bool maybe_applied)> done) {
  // A read at ONE or QUORUM is served by whichever replica it reached, as it stands.
  const bool at_replica = op->is_read && op->read_level != ReadLevel::kPrimary;
  if (!at_replica) {
    Status s = replicas_->CheckPrimary(op->tablet_id, op->epoch);
    if (s.ok()) {
      s = op->is_read ? replicas_->CheckReadLease(op->tablet_id)
                      : replicas_->CheckWritable(op->tablet_id, op->write_level, op->dc);
    }
    if (!s.ok()) {
      done(absl::UnavailableError(s.message()), false);  // refused before it ran
      return;
    }
  }
  Status s = op->run_local();
  if (!s.ok()) {
    // Storage trouble after the write reached the log may still leave it applied.
    done(std::move(s), !op->is_read && (absl::IsUnavailable(s) || absl::IsDataLoss(s)));
    return;
  }
  if (at_replica) {
    done(Status(), false);
    return;
  }
  const WriteLevel level = op->is_read ? WriteLevel::kQuorum : op->write_level;
  const int64_t timeout = std::max<int64_t>(1, op->deadline_us - clock_->MonotonicMicros());
  replicas_->AwaitCommit(op->tablet_id, level, op->dc, timeout,
                         [done = std::move(done)](Status st) { done(st, !st.ok()); });
}

// ---------------------------------------------------------------------------------------------
// The operations. Each builds its Op for both sides: MakeX(...) with the parameters, then the
// coordinator adds encode/decode and Run()s it; the forward handler decodes the parameters,
// builds the same Op and runs it here.

void Coordinator::Mutate(TableSnapshot table, model::RowMutation mutation,
                         const AccessOptions& options, std::function<void(Status)> done,
                         Executor* blocking) {
  const uint64_t tablet_id = table->TabletFor(mutation.row()).id;
  std::shared_ptr<Op> op =
      NewOp(std::move(table), tablet_id, options, kForwardMutateMethod, /*is_read=*/false);
  op->blocking = blocking;
  auto m = std::make_shared<model::RowMutation>(std::move(mutation));
  op->run_local = [this, op = op.get(), m] { return access_->Mutate(*op->table, *m, AccessOptions()); };
  op->encode = [m](const v1::ForwardTarget& target) {
    v1::ForwardMutateRequest r;
    *r.mutable_target() = target;
    r.add_mutations(m->encoded());
    return r.SerializeAsString();
  };
  op->decode = [](const std::string& bytes, bool* maybe_applied) {
    v1::ForwardMutateResponse r;
    if (!r.ParseFromString(bytes)) return Status(absl::InternalError("malformed Forward.Mutate answer"));
    return GetStatus(r.status(), maybe_applied);
  };
  op->finish = std::move(done);
  Run(std::move(op));
}

namespace {

// What a batch's run leaves: each entry's own outcome (OK until it fails alone).
struct BatchState {
  std::vector<model::RowMutation> mutations;
  std::vector<Status> statuses;
};

// The outcome of the batch's run at the primary: OK when some entry was applied (the batch
// then waits for its level), else the first entry's error.
Status BatchOutcome(const std::vector<Status>& statuses) {
  for (const Status& s : statuses) {
    if (s.ok()) return s;
  }
  return statuses.empty() ? Status() : statuses.front();
}

// Entry storage refused alone may have been applied only after an I/O error (RunHere's rule).
bool EntryMaybeApplied(const Status& s) {
  return absl::IsUnavailable(s) || absl::IsDataLoss(s);
}

}  // namespace

void Coordinator::MutateBatch(TableSnapshot table, size_t tablet_index,
                              std::vector<model::RowMutation> mutations,
                              const AccessOptions& options,
                              std::function<void(std::vector<Status>)> done,
                              Executor* blocking) {
  const uint64_t tablet_id = table->tablets[tablet_index].id;
  std::shared_ptr<Op> op =
      NewOp(std::move(table), tablet_id, options, kForwardMutateMethod, /*is_read=*/false);
  op->blocking = blocking;
  auto st = std::make_shared<BatchState>();
  st->mutations = std::move(mutations);
  op->run_local = [this, op = op.get(), st] {
    st->statuses = access_->MutateRows(*op->table, st->mutations, AccessOptions());
    return BatchOutcome(st->statuses);
  };
  op->encode = [st](const v1::ForwardTarget& target) {
    v1::ForwardMutateRequest r;
    *r.mutable_target() = target;
    for (const model::RowMutation& m : st->mutations) r.add_mutations(m.encoded());
    return r.SerializeAsString();
  };
  op->decode = [st](const std::string& bytes, bool* maybe_applied) {
    v1::ForwardMutateResponse r;
    if (!r.ParseFromString(bytes)) {
      return Status(absl::InternalError("malformed Forward.Mutate answer"));
    }
    st->statuses.assign(st->mutations.size(), Status());
    if (static_cast<size_t>(r.entries_size()) == st->mutations.size()) {
      bool ignored = false;
      for (int i = 0; i < r.entries_size(); ++i) st->statuses[i] = GetStatus(r.entries(i), &ignored);
    }
    return GetStatus(r.status(), maybe_applied);
  };
  op->finish = [st, done = std::move(done)](Status s) {
    // Entries that did not fail alone take the batch's outcome (a refusal, a lost answer, the
    // commit's error); those that did keep their own.
    std::vector<Status> out = std::move(st->statuses);
    out.resize(st->mutations.size());
    if (!s.ok()) {
      for (Status& e : out) {
        if (e.ok()) e = s;
      }
    }
    done(std::move(out));
  };
  Run(std::move(op));
}

void Coordinator::CheckAndMutate(TableSnapshot table, std::string row_key,
                                 std::shared_ptr<model::RowFilter> predicate,
                                 model::RowMutation on_true, model::RowMutation on_false,
                                 const AccessOptions& options,
                                 std::function<void(StatusOr<bool>)> done, Executor* blocking) {
  const uint64_t tablet_id = table->TabletFor(row_key).id;
  std::shared_ptr<Op> op = NewOp(std::move(table), tablet_id, options,
                                 kForwardCheckAndMutateMethod, /*is_read=*/false);
  op->blocking = blocking;
  struct State {
    std::string row;
    std::shared_ptr<model::RowFilter> predicate;
    model::RowMutation on_true, on_false;
    bool matched = false;
  };
  auto st = std::make_shared<State>(
      State{std::move(row_key), std::move(predicate), std::move(on_true), std::move(on_false)});
  op->run_local = [this, op = op.get(), st]() -> Status {
    ASSIGN_OR_RETURN(st->matched, access_->CheckAndMutate(*op->table, st->row, st->predicate.get(),
                                                          st->on_true, st->on_false,
                                                          AccessOptions()));
    return Status();
  };
  op->encode = [st](const v1::ForwardTarget& target) {
    v1::ForwardCheckAndMutateRequest r;
    *r.mutable_target() = target;
    r.set_row_key(st->row);
    if (st->predicate != nullptr) {
      r.set_has_predicate(true);
      r.set_predicate(st->predicate->source());
    }
    if (!st->on_true.empty()) r.set_on_true(st->on_true.encoded());
    if (!st->on_false.empty()) r.set_on_false(st->on_false.encoded());
    return r.SerializeAsString();
  };
  op->decode = [st](const std::string& bytes, bool* maybe_applied) {
    v1::ForwardCheckAndMutateResponse r;
    if (!r.ParseFromString(bytes)) {
      return Status(absl::InternalError("malformed Forward.CheckAndMutate answer"));
    }
    st->matched = r.matched();
    return GetStatus(r.status(), maybe_applied);
  };
  op->finish = [st, done = std::move(done)](Status s) {
    if (!s.ok()) {
      done(std::move(s));
    } else {
      done(st->matched);
    }
  };
  Run(std::move(op));
}

void Coordinator::ReadModifyWrite(TableSnapshot table, std::string row_key,
                                  std::vector<ReadModifyWriteRule> rules, int64_t now_micros,
                                  size_t max_value_bytes, const AccessOptions& options,
                                  std::function<void(StatusOr<model::Row>)> done,
                                  Executor* blocking) {
  const uint64_t tablet_id = table->TabletFor(row_key).id;
  std::shared_ptr<Op> op = NewOp(std::move(table), tablet_id, options,
                                 kForwardReadModifyWriteMethod, /*is_read=*/false);
  op->blocking = blocking;
  struct State {
    std::string row;
    std::vector<ReadModifyWriteRule> rules;
    int64_t now_micros;
    size_t max_value_bytes;
    model::Row result;
  };
  auto st = std::make_shared<State>(
      State{std::move(row_key), std::move(rules), now_micros, max_value_bytes, {}});
  op->run_local = [this, op = op.get(), st]() -> Status {
    ASSIGN_OR_RETURN(st->result, access_->ReadModifyWrite(*op->table, st->row, st->rules,
                                                          st->now_micros, st->max_value_bytes,
                                                          AccessOptions()));
    return Status();
  };
  op->encode = [st](const v1::ForwardTarget& target) {
    v1::ForwardReadModifyWriteRequest r;
    *r.mutable_target() = target;
    r.set_row_key(st->row);
    for (const ReadModifyWriteRule& rule : st->rules) {
      v1::ReadModifyWriteRuleMessage* m = r.add_rules();
      m->set_family(rule.family);
      m->set_qualifier(rule.qualifier);
      m->set_stored_qualifier(rule.stored_qualifier);
      m->set_increment(rule.kind == ReadModifyWriteRule::Kind::kIncrement);
      m->set_append_value(rule.append_value);
      m->set_increment_amount(rule.increment_amount);
    }
    r.set_now_micros(st->now_micros);
    r.set_max_value_bytes(st->max_value_bytes);
    return r.SerializeAsString();
  };
  op->decode = [st](const std::string& bytes, bool* maybe_applied) {
    v1::ForwardReadModifyWriteResponse r;
    if (!r.ParseFromString(bytes)) {
      return Status(absl::InternalError("malformed Forward.ReadModifyWrite answer"));
    }
    st->result = FromMessage(r.row());
    return GetStatus(r.status(), maybe_applied);
  };
  op->finish = [st, done = std::move(done)](Status s) {
    if (!s.ok()) {
      done(std::move(s));
    } else {
      done(std::move(st->result));
    }
  };
  Run(std::move(op));
}

struct Coordinator::PageState {
  std::vector<model::RowRange> ranges;
  std::shared_ptr<model::RowFilter> filter;
  std::string filter_source;  // to compile afresh for each run
  int64_t rows_limit = 0;
  bool reversed = false;
  int64_t max_rows = 0;
  int64_t max_bytes = 0;
  ReadPage page;
};

namespace {

std::string EncodeRead(const v1::ForwardTarget& target, const std::vector<model::RowRange>& ranges,
                       const std::string& filter_source, int64_t rows_limit, bool reversed,
                       int64_t max_rows, int64_t max_bytes) {
  v1::ForwardReadRequest r;
  *r.mutable_target() = target;
  for (const model::RowRange& range : ranges) {
    v1::RowRangeMessage* m = r.add_ranges();
    m->set_start(range.start);
    m->set_end(range.end);
  }
  if (!filter_source.empty()) {
    r.set_has_filter(true);
    r.set_filter(filter_source);
  }
  r.set_rows_limit(rows_limit);
  r.set_reversed(reversed);
  r.set_max_page_rows(max_rows);
  r.set_max_page_bytes(max_bytes);
  return r.SerializeAsString();
}

Status DecodeRead(const std::string& bytes, ReadPage* page, bool* maybe_applied) {
  v1::ForwardReadResponse r;
  if (!r.ParseFromString(bytes)) return Status(absl::InternalError("malformed Forward.Read answer"));
  *page = ReadPage();
  for (const v1::RowMessage& m : r.rows()) page->rows.push_back(FromMessage(m));
  page->done = r.done();
  page->last_scanned_key = r.last_scanned_key();
  page->rows_seen = r.rows_seen();
  page->cells_seen = r.cells_seen();
  page->joined_epoch = r.joined_epoch();
  page->sequence_before = r.sequence();
  page->sequence_after = r.sequence_after();
  return GetStatus(r.status(), maybe_applied);
}

}  // namespace

Status Coordinator::ReadPageHere(const TableSnapshot& table, uint64_t tablet_id, PageState* st) {
  ReadRequest request;
  request.rows = model::RowSet::Of({}, st->ranges);
  if (!st->filter_source.empty()) {
    ASSIGN_OR_RETURN(request.filter, compile_(*table, st->filter_source));
  } else if (st->filter != nullptr && !st->filter->IsPassAll()) {
    return absl::InternalError("a filter without its source cannot be run twice");
  }
  request.rows_limit = st->rows_limit;
  request.reversed = st->reversed;
  const bool replicated = catalog::IsClusterTabletId(tablet_id);
  ReplicaPosition before;
  if (replicated) {
    ASSIGN_OR_RETURN(before, replicas_->Position(tablet_id));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RowStream> stream,
                   access_->Read(table, std::move(request), AccessOptions()));
  st->page = ReadPage();
  int64_t bytes = 0;
  model::Row row;
  while (static_cast<int64_t>(st->page.rows.size()) < st->max_rows && bytes < st->max_bytes) {
    ASSIGN_OR_RETURN(ReadStep step, stream->Step(&row));
    if (step == ReadStep::kEnd) {
      st->page.done = true;
      break;
    }
    if (step != ReadStep::kRow) continue;
    for (const model::Cell& c : row.cells) bytes += static_cast<int64_t>(c.value.size());
    st->page.rows.push_back(std::move(row));
    row = model::Row();
    if (stream->done()) {
      st->page.done = true;
      break;
    }
  }
  st->page.last_scanned_key = stream->progress().last_scanned_key;
  st->page.rows_seen = stream->progress().rows_seen;
  st->page.cells_seen = stream->progress().cells_seen;
  if (replicated) {
    ASSIGN_OR_RETURN(ReplicaPosition after, replicas_->Position(tablet_id));
    if (after.joined_epoch != before.joined_epoch || after.last_sequence < before.last_sequence) {
      // Rebuilt or joined another epoch under the read: its rows may mix two contents.
      return absl::UnavailableError(StrCat(catalog::TabletName(tablet_id), " changed at ", channel_->self(),
                                           " during the read"));
    }
    st->page.joined_epoch = before.joined_epoch;
    st->page.sequence_before = before.last_sequence;
    st->page.sequence_after = after.last_sequence;
  }
  return Status();
}

void Coordinator::RunQuorumRead(std::shared_ptr<Op> op, std::shared_ptr<PageState> st,
                                const catalog::TabletConfig& config,
                                std::function<void(Status, bool)> done) {
  const uint64_t tablet_id = op->tablet_id;
  ReadPageAt read = [this, op, st](const std::string& member,
                                   std::function<void(StatusOr<ReadPage>)> answer) {
    auto mine = std::make_shared<PageState>(*st);
    if (member == channel_->self()) {
      Status s = ReadPageHere(op->table, op->tablet_id, mine.get());
      if (!s.ok()) return answer(s);
      return answer(std::move(mine->page));
    }
    v1::ForwardTarget t;
    t.set_table(op->table->full_name);
    t.set_tablet_id(op->tablet_id);
    t.set_epoch(op->epoch);
    t.set_write_level(static_cast<int>(op->write_level));
    t.set_read_level(static_cast<int>(ReadLevel::kQuorum));
    const int64_t remaining = std::max<int64_t>(1, op->deadline_us - clock_->MonotonicMicros());
    t.set_timeout_us(remaining);
    channel_->Call(member, kForwardReadMethod,
                   EncodeRead(t, mine->ranges, mine->filter_source, mine->rows_limit,
                              mine->reversed, mine->max_rows, mine->max_bytes),
                   std::min(remaining, options_.attempt_timeout_us),
                   [mine, answer = std::move(answer)](StatusOr<std::string> response) {
                     if (!response.ok()) return answer(response.status());
                     bool maybe_applied = false;
                     Status s = DecodeRead(*response, &mine->page, &maybe_applied);
                     if (!s.ok()) return answer(s);
                     answer(std::move(mine->page));
                   });
  };
  PositionAt position = [this, tablet_id](const std::string& member,
                                          std::function<void(StatusOr<ReplicaPosition>)> answer) {
    if (member == channel_->self()) return answer(replicas_->Position(tablet_id));
    v1::ForwardPositionRequest r;
    r.set_tablet_id(tablet_id);
    channel_->Call(member, kForwardPositionMethod, r.SerializeAsString(),
                   options_.attempt_timeout_us,
                   [answer = std::move(answer)](StatusOr<std::string> response) {
                     if (!response.ok()) return answer(response.status());
                     v1::ForwardPositionResponse p;
                     if (!p.ParseFromString(*response)) {
                       return answer(absl::InternalError("malformed Forward.Position answer"));
                     }
                     bool maybe_applied = false;
                     Status s = GetStatus(p.status(), &maybe_applied);
                     if (!s.ok()) return answer(s);
                     answer(ReplicaPosition{p.joined_epoch(), p.sequence()});
                   });
  };
  CurrentConfig current = [this, tablet_id] { return replicas_->GetConfig(tablet_id); };
  replication::RunQuorumRead(config, std::move(read), std::move(position), std::move(current),
                             &retries_, clock_, op->deadline_us, QuorumReadOptions(),
                             [st, done = std::move(done)](StatusOr<ReadPage> page) {
                               if (!page.ok()) return done(page.status(), false);
                               st->page = *std::move(page);
                               done(Status(), false);
                             });
}

void Coordinator::Read(TableSnapshot table, size_t tablet_index,
                       std::vector<model::RowRange> ranges,
                       std::shared_ptr<model::RowFilter> filter, int64_t rows_limit,
                       bool reversed, const AccessOptions& options,
                       std::function<void(StatusOr<ReadPage>)> done) {
  const uint64_t tablet_id = table->tablets[tablet_index].id;
  std::shared_ptr<Op> op =
      NewOp(std::move(table), tablet_id, options, kForwardReadMethod, /*is_read=*/true);
  auto st = std::make_shared<PageState>();
  st->ranges = std::move(ranges);
  st->filter_source = filter != nullptr ? filter->source() : std::string();
  st->filter = std::move(filter);
  st->rows_limit = rows_limit;
  st->reversed = reversed;
  st->max_rows = options_.max_page_rows;
  st->max_bytes = options_.max_page_bytes;
  op->run_local = [this, op = op.get(), st] {
    return ReadPageHere(op->table, op->tablet_id, st.get());
  };
  op->encode = [st](const v1::ForwardTarget& target) {
    return EncodeRead(target, st->ranges, st->filter_source, st->rows_limit, st->reversed,
                      st->max_rows, st->max_bytes);
  };
  op->decode = [st](const std::string& bytes, bool* maybe_applied) {
    return DecodeRead(bytes, &st->page, maybe_applied);
  };
  if (op->read_level == ReadLevel::kQuorum) {
    op->run_fanout = [this, op = op.get(), st](const catalog::TabletConfig& config,
                                               std::function<void(Status, bool)> done) {
      RunQuorumRead(op->shared_from_this(), st, config, std::move(done));
    };
  }
  op->finish = [st, done = std::move(done)](Status s) {
    if (!s.ok()) {
      done(std::move(s));
    } else {
      done(std::move(st->page));
    }
  };
  Run(std::move(op));
}

namespace {

// The part of `table` that is tablet `index`: the local drop then touches only that tablet.
catalog::TableInfo OneTablet(const catalog::TableInfo& table, size_t index) {
  catalog::TableInfo one = table;
  one.tablets = {table.tablets[index]};
  return one;
}

}  // namespace

void Coordinator::DropRowRange(TableSnapshot table, size_t tablet_index, std::string prefix,
                               const AccessOptions& options,
                               std::function<void(StatusOr<uint64_t>)> done) {
  const uint64_t tablet_id = table->tablets[tablet_index].id;
  std::shared_ptr<Op> op = NewOp(std::move(table), tablet_id, options,
                                 kForwardDropRowRangeMethod, /*is_read=*/false);
  op->idempotent = true;
  struct State {
    std::string prefix;
    size_t tablet_index;
    uint64_t deleted = 0;
  };
  auto st = std::make_shared<State>(State{std::move(prefix), tablet_index});
  op->run_local = [this, op = op.get(), st]() -> Status {
    ASSIGN_OR_RETURN(st->deleted,
                     access_->DropRowRange(OneTablet(*op->table, st->tablet_index), st->prefix,
                                           AccessOptions()));
    return Status();
  };
  op->encode = [st](const v1::ForwardTarget& target) {
    v1::ForwardDropRowRangeRequest r;
    *r.mutable_target() = target;
    r.set_prefix(st->prefix);
    return r.SerializeAsString();
  };
  op->decode = [st](const std::string& bytes, bool* maybe_applied) {
    v1::ForwardDropRowRangeResponse r;
    if (!r.ParseFromString(bytes)) {
      return Status(absl::InternalError("malformed Forward.DropRowRange answer"));
    }
    st->deleted = r.deleted();
    return GetStatus(r.status(), maybe_applied);
  };
  op->finish = [st, done = std::move(done)](Status s) {
    if (!s.ok()) return done(std::move(s));
    done(st->deleted);
  };
  Run(std::move(op));
}

// ---------------------------------------------------------------------------------------------
// Serving forwarded operations

bool Coordinator::Handle(const std::string& /*from*/, const std::string& method,
                         std::string& request, RpcChannel::Responder& respond) {
  if (method == kForwardPositionMethod) {
    ServePosition(request, std::move(respond));
    return true;
  }
  if (method != kForwardMutateMethod && method != kForwardCheckAndMutateMethod &&
      method != kForwardReadModifyWriteMethod && method != kForwardReadMethod &&
      method != kForwardDropRowRangeMethod) {
    return false;
  }
  ServeForward(method, std::move(request), std::move(respond));
  return true;
}

void Coordinator::ServePosition(const std::string& request, RpcChannel::Responder respond) {
  v1::ForwardPositionRequest r;
  if (!r.ParseFromString(request)) {
    respond(absl::InvalidArgumentError("malformed Forward.Position call: does not parse"));
    return;
  }
  v1::ForwardPositionResponse out;
  StatusOr<ReplicaPosition> p = replicas_->Position(r.tablet_id());
  SetStatus(p.status(), false, out.mutable_status());
  if (p.ok()) {
    out.set_joined_epoch(p->joined_epoch);
    out.set_sequence(p->last_sequence);
  }
  respond(out.SerializeAsString());
}

void Coordinator::ServeForward(const std::string& method, std::string request,
                               RpcChannel::Responder respond) {
  auto op = std::make_shared<Op>();
  v1::ForwardTarget target;
  // Each kind: parse, then set run_local and a responder that encodes the result.
  std::function<std::string(const Status&, bool)> answer;
  auto bad = [&](std::string_view what) {
    respond(absl::InvalidArgumentError(StrCat("malformed ", method, " call: ", what)));
  };
  v1::ForwardMutateRequest mutate;
  v1::ForwardCheckAndMutateRequest cam;
  v1::ForwardReadModifyWriteRequest rmw;
  v1::ForwardReadRequest read;
  v1::ForwardDropRowRangeRequest drop;
  if (method == kForwardMutateMethod) {
    if (!mutate.ParseFromString(request)) return bad("does not parse");
    target = mutate.target();
  } else if (method == kForwardCheckAndMutateMethod) {
    if (!cam.ParseFromString(request)) return bad("does not parse");
    target = cam.target();
  } else if (method == kForwardReadModifyWriteMethod) {
    if (!rmw.ParseFromString(request)) return bad("does not parse");
    target = rmw.target();
  } else if (method == kForwardDropRowRangeMethod) {
    if (!drop.ParseFromString(request)) return bad("does not parse");
    target = drop.target();
  } else {
    if (!read.ParseFromString(request)) return bad("does not parse");
    target = read.target();
  }
  std::optional<WriteLevel> wl = WriteLevelFromInt(target.write_level());
  std::optional<ReadLevel> rl = ReadLevelFromInt(target.read_level());
  if (!wl.has_value() || !rl.has_value()) return bad("unknown consistency level");
  StatusOr<TableSnapshot> table = lookup_(target.table());
  if (!table.ok()) {
    // The schema may not have reached this node yet: a refusal the coordinator retries.
    table = absl::UnavailableError(StrCat("table ", target.table(), " is not known at ",
                                          channel_->self(), " yet: ", table.status().message()));
  }
  op->tablet_id = target.tablet_id();
  op->epoch = target.epoch();
  op->write_level = *wl;
  op->read_level = *rl;
  // LOCAL_QUORUM counts the coordinator's DC (an older coordinator sends none: this node's).
  op->dc = target.coordinator_dc().empty() ? options_.dc : target.coordinator_dc();
  // The coordinator's remaining time (an older coordinator sends none: the default).
  op->deadline_us = clock_->MonotonicMicros() +
                    (target.timeout_us() > 0 ? target.timeout_us()
                                             : options_.timeout_us);
  if (table.ok()) op->table = *table;

  if (method == kForwardMutateMethod) {
    auto ms = std::make_shared<std::vector<model::RowMutation>>();
    for (const std::string& encoded : mutate.mutations()) {
      StatusOr<model::RowMutation> m = model::RowMutation::FromEncoded(encoded);
      if (!m.ok()) return bad(std::string(m.status().message()));
      ms->push_back(*std::move(m));
    }
    // The batch in one write (TableAccess::MutateRows), each entry's outcome answered.
    auto statuses = std::make_shared<std::vector<Status>>();
    op->run_local = [this, op = op.get(), ms, statuses]() -> Status {
      *statuses = access_->MutateRows(*op->table, *ms, AccessOptions());
      return BatchOutcome(*statuses);
    };
    answer = [statuses](const Status& s, bool maybe) {
      v1::ForwardMutateResponse r;
      SetStatus(s, maybe, r.mutable_status());
      for (const Status& e : *statuses) SetStatus(e, EntryMaybeApplied(e), r.add_entries());
      return r.SerializeAsString();
    };
  } else if (method == kForwardCheckAndMutateMethod) {
    auto matched = std::make_shared<bool>(false);
    StatusOr<model::RowMutation> on_true = cam.on_true().empty()
                                               ? model::RowMutation(cam.row_key())
                                               : model::RowMutation::FromEncoded(cam.on_true());
    StatusOr<model::RowMutation> on_false = cam.on_false().empty()
                                                ? model::RowMutation(cam.row_key())
                                                : model::RowMutation::FromEncoded(cam.on_false());
    if (!on_true.ok() || !on_false.ok()) return bad("a mutation does not decode");
    auto args = std::make_shared<std::pair<model::RowMutation, model::RowMutation>>(
        *std::move(on_true), *std::move(on_false));
    op->run_local = [this, op = op.get(), cam, matched, args]() -> Status {
      std::optional<model::RowFilter> predicate;
      if (cam.has_predicate()) {
        ASSIGN_OR_RETURN(predicate, compile_(*op->table, cam.predicate()));
      }
      ASSIGN_OR_RETURN(*matched,
                       access_->CheckAndMutate(*op->table, cam.row_key(),
                                               predicate.has_value() ? &*predicate : nullptr,
                                               args->first, args->second, AccessOptions()));
      return Status();
    };
    answer = [matched](const Status& s, bool maybe) {
      v1::ForwardCheckAndMutateResponse r;
      SetStatus(s, maybe, r.mutable_status());
      r.set_matched(*matched);
      return r.SerializeAsString();
    };
  } else if (method == kForwardReadModifyWriteMethod) {
    auto result = std::make_shared<model::Row>();
    auto rules = std::make_shared<std::vector<ReadModifyWriteRule>>();
    for (const v1::ReadModifyWriteRuleMessage& m : rmw.rules()) {
      ReadModifyWriteRule rule;
      rule.family = m.family();
      rule.qualifier = m.qualifier();
      rule.stored_qualifier = m.stored_qualifier();
      rule.kind = m.increment() ? ReadModifyWriteRule::Kind::kIncrement
                                : ReadModifyWriteRule::Kind::kAppend;
      rule.append_value = m.append_value();
      rule.increment_amount = m.increment_amount();
      rules->push_back(std::move(rule));
    }
    if (rules->empty()) return bad("no rules");
    op->run_local = [this, op = op.get(), rmw, rules, result]() -> Status {
      ASSIGN_OR_RETURN(*result,
                       access_->ReadModifyWrite(*op->table, rmw.row_key(), *rules,
                                                rmw.now_micros(), rmw.max_value_bytes(),
                                                AccessOptions()));
      return Status();
    };
    answer = [result](const Status& s, bool maybe) {
      v1::ForwardReadModifyWriteResponse r;
      SetStatus(s, maybe, r.mutable_status());
      if (s.ok()) ToMessage(*result, r.mutable_row());
      return r.SerializeAsString();
    };
  } else if (method == kForwardDropRowRangeMethod) {
    auto deleted = std::make_shared<uint64_t>(0);
    op->run_local = [this, op = op.get(), drop, deleted]() -> Status {
      const auto& tablets = op->table->tablets;
      auto it = std::find_if(tablets.begin(), tablets.end(), [&](const catalog::TabletRef& t) {
        return t.id == op->tablet_id;
      });
      if (it == tablets.end()) {
        return absl::UnavailableError(StrCat(catalog::TabletName(op->tablet_id), " is not one of ",
                                             op->table->full_name, " at ", channel_->self()));
      }
      ASSIGN_OR_RETURN(*deleted, access_->DropRowRange(
                                     OneTablet(*op->table, static_cast<size_t>(it - tablets.begin())),
                                     drop.prefix(), AccessOptions()));
      return Status();
    };
    answer = [deleted](const Status& s, bool maybe) {
      v1::ForwardDropRowRangeResponse r;
      SetStatus(s, maybe, r.mutable_status());
      r.set_deleted(*deleted);
      return r.SerializeAsString();
    };
  } else {
    op->is_read = true;
    auto st = std::make_shared<PageState>();
    for (const v1::RowRangeMessage& m : read.ranges()) {
      st->ranges.push_back(model::RowRange{m.start(), m.end()});
    }
    if (read.has_filter()) st->filter_source = read.filter();
    st->rows_limit = read.rows_limit();
    st->reversed = read.reversed();
    st->max_rows = std::max<int64_t>(1, read.max_page_rows());
    st->max_bytes = std::max<int64_t>(1, read.max_page_bytes());
    op->run_local = [this, op = op.get(), st] {
      return ReadPageHere(op->table, op->tablet_id, st.get());
    };
    answer = [st](const Status& s, bool maybe) {
      v1::ForwardReadResponse r;
      SetStatus(s, maybe, r.mutable_status());
      if (s.ok()) {
        for (const model::Row& row : st->page.rows) ToMessage(row, r.add_rows());
        r.set_done(st->page.done);
        r.set_last_scanned_key(st->page.last_scanned_key);
        r.set_rows_seen(st->page.rows_seen);
        r.set_cells_seen(st->page.cells_seen);
        r.set_joined_epoch(st->page.joined_epoch);
        r.set_sequence(st->page.sequence_before);
        r.set_sequence_after(st->page.sequence_after);
      }
      return r.SerializeAsString();
    };
  }
  if (!table.ok()) {
    respond(answer(table.status(), false));
    return;
  }
  RunHere(op, [op, answer, respond = std::move(respond)](Status s, bool maybe) {
    respond(answer(s, maybe));
  });
}

}  // namespace tessera::replication
