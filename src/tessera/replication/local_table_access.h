// LocalTableAccess: TableAccess (table_access.h) over this node's engine, for tables whose
// tablets are all local (docs/replication.md).
//
// Each row goes to the tablet of the TableInfo snapshot that holds it. Every write of a row
// holds the row's stripe of the RowLocks (tablet/row_locks.h): plain writes (Mutate, each row
// DropRowRange deletes, the rows of a MutateRows batch, all of one tablet's at once) in shared
// mode, so they still group-commit together; CheckAndMutate
// and ReadModifyWrite in exclusive mode around their read and their write, so no other write
// of the row lands between the two. Reads take no lock: each tablet read is a consistent
// snapshot.
//
// MutateRows writes each tablet's entries with one Engine::ApplyBatch (or TabletWriter::
// WriteBatch), the tablets one after the other. The engine refuses a whole batch when one
// mutation does not validate; the entries are then written one by one, so that the bad one
// fails alone.
//
// Thread-safety: every method may be called from many threads at once.
#pragma once

#include <cstddef>
#include <memory>

#include "tessera/replication/table_access.h"
#include "tessera/replication/tablet_writer.h"
#include "tessera/tablet/engine.h"
#include "tessera/tablet/row_locks.h"

namespace tessera::replication {

struct LocalTableAccessOptions {
  // --- performance ---
  // Stripes of the row locks (tablet/row_locks.h): more stripes, fewer unrelated rows
  // waiting for each other. > 0.
  size_t row_lock_stripes = tablet::RowLocks::kDefaultStripes;
};

class LocalTableAccess final : public TableAccess {
 public:
  // `engine` must outlive this object and every stream it returns. Writes go to `writer` when
  // given (it must outlive this object), else straight into the engine.
  explicit LocalTableAccess(tablet::Engine* engine,
                            LocalTableAccessOptions options = LocalTableAccessOptions(),
                            TabletWriter* writer = nullptr);

  LocalTableAccess(const LocalTableAccess&) = delete;
  LocalTableAccess& operator=(const LocalTableAccess&) = delete;

  Status Mutate(const catalog::TableInfo& table, const model::RowMutation& mutation,
                const AccessOptions& options) override;
  std::vector<Status> MutateRows(const catalog::TableInfo& table,
                                 std::span<const model::RowMutation> mutations,
                                 const AccessOptions& options) override;
  StatusOr<bool> CheckAndMutate(const catalog::TableInfo& table, std::string_view row_key,
                                model::RowFilter* predicate, const model::RowMutation& on_true,
                                const model::RowMutation& on_false,
                                const AccessOptions& options) override;
  StatusOr<model::Row> ReadModifyWrite(const catalog::TableInfo& table, std::string_view row_key,
                                       const std::vector<ReadModifyWriteRule>& rules,
                                       int64_t now_micros, size_t max_value_bytes,
                                       const AccessOptions& options) override;
  StatusOr<std::unique_ptr<RowStream>> Read(TableSnapshot table, ReadRequest request,
                                            const AccessOptions& options) override;
  StatusOr<std::vector<RowKeySample>> SampleRowKeys(const catalog::TableInfo& table,
                                                    uint64_t every_bytes) override;
  StatusOr<uint64_t> DropRowRange(const catalog::TableInfo& table,
                                  std::string_view prefix,
                                  const AccessOptions& options) override;

 private:
  Status Write(tablet::TabletId id, const model::RowMutation& mutation);
  Status WriteBatch(tablet::TabletId id, std::span<const model::RowMutation> batch);
  // Writes `batch`, all of tablet `id`, setting out[indexes[i]] for batch[i].
  void WriteTabletBatch(const catalog::TableInfo& table, tablet::TabletId id,
                        std::span<const model::RowMutation> batch,
                        const std::vector<size_t>& indexes, std::vector<Status>* out);

  tablet::Engine* const engine_;
  TabletWriter* const writer_;
  tablet::RowLocks locks_;
};

}  // namespace tessera::replication
