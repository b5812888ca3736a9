#include "tessera/replication/local_row_stream.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "tessera/model/family_kind.h"

namespace tessera::replication {

Status EngineError(const catalog::TableInfo& table, const Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      // The tablet was dropped under us: the table was deleted concurrently.
      return absl::NotFoundError(StrCat("table \"", table.full_name, "\" not found"));
    case absl::StatusCode::kFailedPrecondition:
      // The engine is closed: the server is shutting down; a retry reaches it again later.
      return absl::UnavailableError(StrCat("the server is shutting down: ", s.message()));
    default:
      return s;
  }
}

namespace {

class LocalRowStream final : public RowStream {
 public:
  LocalRowStream(const tablet::Engine* engine, TableSnapshot table, ReadRequest request)
      : engine_(engine),
        table_(std::move(table)),
        rows_(std::move(request.rows)),
        filter_(std::move(request.filter)),
        limit_(request.rows_limit),
        reversed_(request.reversed),
        spec_(filter_.pushdown().ToReadSpec()),
        kinds_(table_->schema) {
    if (filter_.pushdown().outputs_nothing) rows_ = model::RowSet();
  }

  // Reads one row from the scan (or moves to the next tablet or range), filters it.
  StatusOr<ReadStep> Step(model::Row* out) override {
    if (done_) return ReadStep::kEnd;
    model::Row row;
    if (point_row_.has_value()) {
      row = *std::move(point_row_);
      point_row_.reset();
    } else if (iter_ != nullptr && iter_->Valid()) {
      row = iter_->row();
      iter_->Next();
    } else {
      if (iter_ != nullptr) {
        Status s = iter_->status();
        iter_.reset();
        if (!s.ok()) return EngineError(*table_, s);
      }
      RETURN_IF_ERROR(OpenNext());
      return done_ ? ReadStep::kEnd : ReadStep::kNoRow;
    }
    ++progress_.rows_seen;
    progress_.cells_seen += static_cast<int64_t>(row.cells.size());
    progress_.last_scanned_key = row.key;
    RETURN_IF_ERROR(kinds_.ToPresented(&row));
    if (!filter_.IsPassAll()) {
      filter_.Apply(&row);
      kinds_.RestoreStoredOrder(&row);
    }
    if (row.cells.empty()) return ReadStep::kNoRow;
    ++progress_.rows_returned;
    progress_.cells_returned += static_cast<int64_t>(row.cells.size());
    *out = std::move(row);
    if (limit_ > 0 && progress_.rows_returned >= limit_) done_ = true;
    return ReadStep::kRow;
  }

  bool done() const override { return done_; }
  const ReadProgress& progress() const override { return progress_; }

 private:
  // Opens the scan of the next (range, tablet) pair in scan order; done_ when none is left.
  // A range of one key is read with ReadRow (bloom filters, no iterator).
  Status OpenNext() {
    const std::vector<model::RowRange>& ranges = rows_.ranges();
    while (tablet_pos_ >= tablets_.size()) {
      if (range_pos_ >= ranges.size()) {
        done_ = true;
        return Status();
      }
      current_range_ = reversed_ ? ranges.size() - 1 - range_pos_ : range_pos_;
      ++range_pos_;
      const model::RowRange& r = ranges[current_range_];
      tablets_ = table_->TabletsOverlapping(r.start, r.end);
      if (reversed_) std::reverse(tablets_.begin(), tablets_.end());
      tablet_pos_ = 0;
    }
    const catalog::TabletRef& t = table_->tablets[tablets_[tablet_pos_++]];
    const model::RowRange& r = ranges[current_range_];
    if (r.IsSingleKey()) {
      StatusOr<std::optional<model::Row>> row = engine_->ReadRow(t.id, r.start, spec_);
      if (!row.ok()) return EngineError(*table_, row.status());
      point_row_ = *std::move(row);
      return Status();
    }
    tablet::ScanOptions options;
    options.reversed = reversed_;
    if (filter_.IsPassAll() && limit_ > 0) {
      options.limit = static_cast<uint64_t>(limit_ - progress_.rows_returned);
    }
    StatusOr<std::unique_ptr<tablet::RowIterator>> it = engine_->Scan(t.id, r, spec_, options);
    if (!it.ok()) return EngineError(*table_, it.status());
    iter_ = *std::move(it);
    return Status();
  }

  const tablet::Engine* const engine_;
  const TableSnapshot table_;
  model::RowSet rows_;  // its ranges are visited backwards when reversed_
  model::RowFilter filter_;
  const int64_t limit_;  // 0 = none
  const bool reversed_;
  const model::ReadSpec spec_;
  const model::FamilyKinds kinds_;

  bool done_ = false;
  size_t range_pos_ = 0;         // ranges started so far
  size_t current_range_ = 0;     // index into rows_.ranges()
  std::vector<size_t> tablets_;  // tablets of the current range, in scan order
  size_t tablet_pos_ = 0;
  std::unique_ptr<tablet::RowIterator> iter_;
  std::optional<model::Row> point_row_;  // the row of a single-key range, until consumed
  ReadProgress progress_;
};

}  // namespace

std::unique_ptr<RowStream> NewLocalRowStream(const tablet::Engine* engine, TableSnapshot table,
                                             ReadRequest request) {
  return std::make_unique<LocalRowStream>(engine, std::move(table), std::move(request));
}

}  // namespace tessera::replication
