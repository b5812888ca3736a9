#include "tessera/cli/shell_executor.h"

#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "tessera/cli/shell_format.h"
#include "tessera/cli/shell_progress.h"
#include "tessera/model/gc_rule_proto.h"

namespace tessera::cli::shell {
namespace {

namespace btv2 = ::google::bigtable::v2;
using client::ReadRowsOptions;

constexpr auto kTableNamesTtl = std::chrono::seconds(5);

btv2::RowSet ScopeRows(const RowScope& scope) {
  if (scope.prefix.has_value()) return client::RowPrefixSet(*scope.prefix);
  if (scope.start.empty() && scope.end.empty()) return btv2::RowSet();
  return client::RowRangeSet(scope.start, scope.end);
}

btv2::RowFilter RegexRowFilter(const RegexFilter& f) {
  btv2::RowFilter out;
  switch (f.target) {
    case RegexFilter::Target::kRow: out.set_row_key_regex_filter(f.regex); break;
    case RegexFilter::Target::kFamily: out.set_family_name_regex_filter(f.regex); break;
    case RegexFilter::Target::kQualifier: out.set_column_qualifier_regex_filter(f.regex); break;
    case RegexFilter::Target::kValue: out.set_value_regex_filter(f.regex); break;
  }
  return out;
}

}  // namespace

std::string DescribeError(const Status& status) {
  return StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

ShellExecutor::ShellExecutor(client::BigtableClient* client, ExecutorOptions options,
                             std::FILE* out, std::FILE* err, const std::atomic<bool>* interrupted)
    : client_(client), options_(options), out_(out), err_(err), interrupted_(interrupted) {}

void ShellExecutor::Print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), out_);
}

Status ShellExecutor::Execute(const Command& c) {
  switch (c.kind) {
    case CommandKind::kHelp: return Help(c);
    case CommandKind::kLs: return Ls();
    case CommandKind::kDescribe: return Describe(c);
    case CommandKind::kCreateTable: return CreateTable(c);
    case CommandKind::kDropTable:
      Forget(c.table);
      table_names_.clear();
      return client_->DeleteTable(c.table);
    case CommandKind::kCreateFamily: return CreateFamily(c);
    case CommandKind::kDropFamily:
      Forget(c.table);
      return client_->DropFamily(c.table, c.family);
    case CommandKind::kSetGc:
      Forget(c.table);
      return client_->UpdateGcRule(c.table, c.family, model::GcRuleToProto(c.gc_rule));
    case CommandKind::kPut: return Put(c);
    case CommandKind::kGet: return Get(c);
    case CommandKind::kScan: return Scan(c);
    case CommandKind::kDelete: return Delete(c);
    case CommandKind::kCount: return Count(c);
    case CommandKind::kTruncate: return Truncate(c);
    case CommandKind::kIncrement: return Increment(c);
    case CommandKind::kAppend: return Append(c);
    case CommandKind::kQuit:
      quit_ = true;
      return absl::OkStatus();
  }
  return absl::InternalError("unhandled command");
}

// ---- schema ----

StatusOr<const TableInfo*> ShellExecutor::Schema(const std::string& table) {
  auto it = schemas_.find(table);
  if (it != schemas_.end()) return &it->second;
  ASSIGN_OR_RETURN(const auto proto, client_->GetTable(table));
  auto [inserted, ok] = schemas_.insert_or_assign(table, TableInfoFromProto(table, proto));
  return &inserted->second;
}

StatusOr<ResolvedColumn> ShellExecutor::Resolve(const std::string& table, const ColumnRef& ref,
                                                bool for_write) {
  ASSIGN_OR_RETURN(const TableInfo* info, Schema(table));
  if (info->Find(ref.family) == nullptr) {
    // Maybe the family was created since the schema was cached.
    Forget(table);
    ASSIGN_OR_RETURN(info, Schema(table));
  }
  return ResolveColumn(*info, ref, for_write);
}

std::vector<std::string> ShellExecutor::TableNames() {
  const auto now = std::chrono::steady_clock::now();
  if (table_names_.empty() || now - table_names_time_ > kTableNamesTtl) {
    client::CallOptions call;
    call.timeout = std::chrono::milliseconds(2000);
    StatusOr<std::vector<std::string>> names = client_->ListTables(call);
    table_names_ = names.ok() ? *std::move(names) : std::vector<std::string>();
    table_names_time_ = now;
  }
  return table_names_;
}

std::vector<std::string> ShellExecutor::FamilyNames(const std::string& table) {
  StatusOr<const TableInfo*> info = Schema(table);
  std::vector<std::string> names;
  if (!info.ok()) return names;
  for (const auto& [name, family] : (*info)->families) names.push_back(name);
  return names;
}

// ---- commands ----

Status ShellExecutor::Help(const Command& c) {
  if (c.topic.empty()) {
    std::string out = "commands:\n";
    for (const CommandHelp& h : AllCommands()) {
      out += fmt::format("  {:<15} {}\n", h.name, h.summary);
    }
    out +=
        "\n\"help <command>\" shows its syntax. Commands end at ';' or a newline; quote words\n"
        "with '...' or \"...\" (escapes such as \\x00 and \\n work outside single quotes).\n";
    Print(out);
    return absl::OkStatus();
  }
  for (const CommandHelp* h : FindHelp(c.topic)) {
    std::string out = StrCat("usage: ", h->usage, "\n  ", h->summary, "\n");
    if (*h->details != '\0') out += StrCat(h->details, "\n");
    Print(out);
  }
  return absl::OkStatus();
}

Status ShellExecutor::Ls() {
  ASSIGN_OR_RETURN(const std::vector<std::string> tables, client_->ListTables());
  table_names_ = tables;
  table_names_time_ = std::chrono::steady_clock::now();
  std::string out;
  for (const std::string& t : tables) out += StrCat(t, "\n");
  Print(out);
  return absl::OkStatus();
}

Status ShellExecutor::Describe(const Command& c) {
  Forget(c.table);
  ASSIGN_OR_RETURN(const TableInfo* info, Schema(c.table));
  Print(FormatTableInfo(*info));
  return absl::OkStatus();
}

Status ShellExecutor::CreateTable(const Command& c) {
  std::vector<client::FamilySpec> families;
  for (const FamilyDef& f : c.families) {
    families.push_back({f.name, model::GcRuleToProto(f.gc_rule), f.super_columns, f.time_sorted});
  }
  Forget(c.table);
  table_names_.clear();
  ::tessera::v1::TableOptions options;
  options.set_compaction(c.compaction);
  return client_->CreateTable(c.table, families, c.splits, options);
}

Status ShellExecutor::CreateFamily(const Command& c) {
  const FamilyDef& f = c.families.at(0);
  Forget(c.table);
  return client_->CreateFamily(
      c.table, {f.name, model::GcRuleToProto(f.gc_rule), f.super_columns, f.time_sorted});
}

Status ShellExecutor::Put(const Command& c) {
  std::vector<btv2::Mutation> mutations;
  for (const CellWrite& w : c.writes) {
    ASSIGN_OR_RETURN(const ResolvedColumn col, Resolve(c.table, w.column, /*for_write=*/true));
    mutations.push_back(client::SetCellMutation(col.family, col.qualifier, w.value,
                                                w.timestamp_micros.value_or(client::kServerTime)));
  }
  return client_->MutateRow(c.table, c.row, mutations);
}

StatusOr<std::optional<btv2::RowFilter>> ShellExecutor::ReadFilter(const Command& c) {
  std::vector<btv2::RowFilter> chain;
  std::vector<btv2::RowFilter> columns;
  for (const ColumnRef& ref : c.columns) {
    ASSIGN_OR_RETURN(const ResolvedColumn col, Resolve(c.table, ref, /*for_write=*/false));
    columns.push_back(ColumnFilter(col));
  }
  if (std::optional<btv2::RowFilter> f = InterleaveFilters(std::move(columns))) {
    chain.push_back(*std::move(f));
  }
  for (const RegexFilter& f : c.filters) chain.push_back(RegexRowFilter(f));
  if (c.versions > 0) chain.emplace_back().set_cells_per_column_limit_filter(c.versions);
  if (c.keys_only) {
    chain.emplace_back().set_cells_per_row_limit_filter(1);
    chain.emplace_back().set_strip_value_transformer(true);
  }
  return ChainFilters(std::move(chain));
}

Status ShellExecutor::Get(const Command& c) {
  // The filter first: resolving its columns may refresh the cached schema.
  ASSIGN_OR_RETURN(const auto filter, ReadFilter(c));
  ASSIGN_OR_RETURN(const TableInfo* info, Schema(c.table));
  ASSIGN_OR_RETURN(const std::optional<model::Row> row, client_->ReadRow(c.table, c.row, filter));
  if (!row.has_value()) {
    Print(StrCat("(row ", QuoteBytes(c.row), " not found)\n"));
    return absl::OkStatus();
  }
  Print(FormatRow(*row, *info, options_.time_format));
  return absl::OkStatus();
}

Status ShellExecutor::StreamRows(const Command& c, const ReadRowsOptions& options,
                                 bool show_progress,
                                 const std::function<void(const model::Row&)>& on_row,
                                 int64_t* rows) {
  Progress progress(err_, Progress::Options{.enabled = show_progress});
  std::unique_ptr<client::RowReader> reader = client_->ReadRows(c.table, options);
  // Next() may block while the server scans; a helper thread turns Ctrl-C into a cancelled call.
  absl::Mutex mu;
  bool done = false;
  std::thread watcher;
  if (interrupted_ != nullptr) {
    watcher = std::thread([&] {
      absl::MutexLock lock(&mu);
      while (!done) {
        if (interrupted_->load()) {
          reader->TryCancel();
          return;
        }
        mu.AwaitWithTimeout(absl::Condition(&done), absl::Milliseconds(50));
      }
    });
  }
  Status status;
  model::Row row;
  while (true) {
    if (Interrupted()) break;
    StatusOr<bool> more = reader->Next(&row);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    if (!*more) break;
    on_row(row);
    progress.Add();
  }
  {
    absl::MutexLock lock(&mu);
    done = true;
  }
  if (watcher.joinable()) watcher.join();
  progress.Finish();
  *rows = progress.count();
  if (Interrupted()) {
    reader->Cancel();
    std::fflush(out_);
    return absl::CancelledError(StrCat(c.kind == CommandKind::kCount ? "count" : "scan",
                                       " interrupted after ", GroupThousands(*rows), " rows"));
  }
  return status;
}

Status ShellExecutor::Scan(const Command& c) {
  ReadRowsOptions options;
  options.rows = ScopeRows(c.scope);
  options.limit = c.limit;
  options.reversed = c.reverse;
  // The filter first: resolving its columns may refresh the cached schema.
  ASSIGN_OR_RETURN(options.filter, ReadFilter(c));
  ASSIGN_OR_RETURN(const TableInfo* schema, Schema(c.table));
  const TableInfo& info = *schema;
  int64_t rows = 0;
  RETURN_IF_ERROR(StreamRows(
      c, options, options_.scan_progress,
      [&](const model::Row& row) {
        Print(FormatRow(row, info, options_.time_format, c.keys_only));
      },
      &rows));
  if (options_.print_row_counts) {
    Print(StrCat("(", GroupThousands(rows), rows == 1 ? " row)\n" : " rows)\n"));
  }
  return absl::OkStatus();
}

Status ShellExecutor::Delete(const Command& c) {
  if (c.columns.empty()) return client_->MutateRow(c.table, c.row, {client::DeleteRowMutation()});
  ASSIGN_OR_RETURN(const ResolvedColumn col, Resolve(c.table, c.columns[0], false));
  switch (col.what) {
    case ResolvedColumn::What::kFamily:
      return client_->MutateRow(c.table, c.row, {client::DeleteFamilyMutation(col.family)});
    case ResolvedColumn::What::kQualifier:
      return client_->MutateRow(c.table, c.row,
                                {client::DeleteColumnMutation(col.family, col.qualifier)});
    case ResolvedColumn::What::kSuperColumn: {
      // The API deletes single columns only: find the super column's columns, delete each (in
      // one atomic mutation; a column written in between survives).
      btv2::RowFilter filter;
      *filter.mutable_chain()->add_filters() = ColumnFilter(col);
      filter.mutable_chain()->add_filters()->set_strip_value_transformer(true);
      ASSIGN_OR_RETURN(const std::optional<model::Row> row,
                       client_->ReadRow(c.table, c.row, filter));
      if (!row.has_value()) return absl::OkStatus();
      std::vector<btv2::Mutation> mutations;
      std::string last;
      for (const model::Cell& cell : row->cells) {
        if (!mutations.empty() && cell.qualifier == last) continue;
        last = cell.qualifier;
        mutations.push_back(client::DeleteColumnMutation(cell.family, cell.qualifier));
      }
      return client_->MutateRow(c.table, c.row, mutations);
    }
  }
  return absl::InternalError("unhandled column kind");
}

Status ShellExecutor::Count(const Command& c) {
  ReadRowsOptions options;
  options.rows = ScopeRows(c.scope);
  btv2::RowFilter filter;
  filter.mutable_chain()->add_filters()->set_cells_per_row_limit_filter(1);
  filter.mutable_chain()->add_filters()->set_strip_value_transformer(true);
  options.filter = filter;
  int64_t rows = 0;
  RETURN_IF_ERROR(StreamRows(
      c, options, options_.count_progress, [](const model::Row&) {}, &rows));
  Print(StrCat(rows, "\n"));
  return absl::OkStatus();
}

Status ShellExecutor::Truncate(const Command& c) {
  if (c.scope.prefix.has_value()) return client_->DropRowsWithPrefix(c.table, *c.scope.prefix);
  return client_->DropAllRows(c.table);
}

Status ShellExecutor::Increment(const Command& c) {
  ASSIGN_OR_RETURN(const ResolvedColumn col, Resolve(c.table, c.columns[0], true));
  ASSIGN_OR_RETURN(
      const model::Row row,
      client_->ReadModifyWriteRow(c.table, c.row,
                                  {client::IncrementRule(col.family, col.qualifier, c.amount)}));
  if (row.cells.empty()) return absl::InternalError("increment: the server returned no cell");
  ASSIGN_OR_RETURN(const int64_t value, client::DecodeBigEndianInt64(row.cells.back().value));
  Print(StrCat(value, "\n"));
  return absl::OkStatus();
}

Status ShellExecutor::Append(const Command& c) {
  ASSIGN_OR_RETURN(const ResolvedColumn col, Resolve(c.table, c.columns[0], true));
  ASSIGN_OR_RETURN(const model::Row row,
                   client_->ReadModifyWriteRow(
                       c.table, c.row, {client::AppendRule(col.family, col.qualifier, c.value)}));
  if (row.cells.empty()) return absl::InternalError("append: the server returned no cell");
  Print(StrCat(QuoteBytes(row.cells.back().value), "\n"));
  return absl::OkStatus();
}

}  // namespace tessera::cli::shell
