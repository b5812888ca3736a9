#include "tessera/model/row_filter.h"

#include <algorithm>
#include <iterator>
#include <string_view>
#include <utility>

#include "re2/re2.h"

namespace tessera::model {

bool ByteRange::Contains(std::string_view s) const {
  if (has_start) {
    int c = s.compare(start);
    if (c < 0 || (c == 0 && start_open)) return false;
  }
  if (has_end) {
    int c = s.compare(end);
    if (c > 0 || (c == 0 && end_open)) return false;
  }
  return true;
}

FilterNode::FilterNode() = default;
FilterNode::FilterNode(Kind k) : kind(k) {}
FilterNode::~FilterNode() = default;
FilterNode::FilterNode(FilterNode&&) noexcept = default;
FilterNode& FilterNode::operator=(FilterNode&&) noexcept = default;

namespace {

using Kind = FilterNode::Kind;
using Cells = std::vector<Cell>;

struct EvalContext {
  Random* random;
  Cells* sunk;  // cells that reached a sink
};

bool FullMatch(const RE2& re, std::string_view text) {
  return re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::ANCHOR_BOTH,
                  nullptr, 0);
}

bool SameColumn(const Cell& a, const Cell& b) {
  return a.family == b.family && a.qualifier == b.qualifier;
}

// Whether a per-cell predicate keeps `c`. REQUIRES: n is one of the per-cell predicate kinds.
bool CellMatches(const FilterNode& n, const Cell& c) {
  switch (n.kind) {
    case Kind::kFamilyRegex:
      return FullMatch(*n.regex, c.family);
    case Kind::kQualifierRegex:
      return FullMatch(*n.regex, c.qualifier);
    case Kind::kValueRegex:
      return FullMatch(*n.regex, c.value);
    case Kind::kColumnRange:
      return c.family == n.family && n.range.Contains(c.qualifier);
    case Kind::kTimestampRange:
      return n.time_range.Contains(c.timestamp_micros);
    case Kind::kValueRange:
      return n.range.Contains(c.value);
    case Kind::kValueBitmask: {
      if (c.value.size() != n.text.size()) return false;
      for (size_t i = 0; i < c.value.size(); ++i) {
        const auto v = static_cast<unsigned char>(c.value[i]);
        const auto m = static_cast<unsigned char>(n.text[i]);
        if ((v & m) != m) return false;
      }
      return true;
    }
    default:
      return true;
  }
}

// Appends `b` to `a` keeping cell order; on ties the cells of `a` come first.
void MergeInto(Cells* a, Cells&& b) {
  if (b.empty()) return;
  if (a->empty()) {
    *a = std::move(b);
    return;
  }
  Cells out;
  out.reserve(a->size() + b.size());
  std::merge(std::make_move_iterator(a->begin()), std::make_move_iterator(a->end()),
             std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()),
             std::back_inserter(out), CellOrderLess);
  *a = std::move(out);
}

// Replaces *cells by n's output on them. Recursion depth is bounded by the compiled depth.
void Eval(const FilterNode& n, std::string_view key, Cells* cells, EvalContext& ctx) {
  switch (n.kind) {
    case Kind::kPassAll:
      return;
    case Kind::kBlockAll:
      cells->clear();
      return;
    case Kind::kChain:
      for (const auto& child : n.children) {
        // An empty row stays empty through any filter; stop early.
        if (cells->empty()) return;
        Eval(*child, key, cells, ctx);
      }
      return;
    case Kind::kInterleave: {
      Cells merged;
      for (size_t i = 0; i < n.children.size(); ++i) {
        Cells branch = (i + 1 == n.children.size()) ? std::move(*cells) : *cells;
        Eval(*n.children[i], key, &branch, ctx);
        MergeInto(&merged, std::move(branch));
      }
      *cells = std::move(merged);
      return;
    }
    case Kind::kCondition: {
      Cells probe = *cells;
      Eval(*n.predicate, key, &probe, ctx);
      const FilterNode* branch = probe.empty() ? n.false_branch.get() : n.true_branch.get();
      if (branch == nullptr) {
        cells->clear();
      } else {
        Eval(*branch, key, cells, ctx);
      }
      return;
    }
    case Kind::kSink:
      ctx.sunk->insert(ctx.sunk->end(), std::make_move_iterator(cells->begin()),
                       std::make_move_iterator(cells->end()));
      cells->clear();
      return;
    case Kind::kRowKeyRegex:
      if (!FullMatch(*n.regex, key)) cells->clear();
      return;
    case Kind::kRowSample: {
      // A uniform double in [0, 1) from the top 53 bits; drawn once per row evaluation.
      const double u = static_cast<double>(ctx.random->Next64() >> 11) * 0x1.0p-53;
      if (!(u < n.probability)) cells->clear();
      return;
    }
    case Kind::kFamilyRegex:
    case Kind::kQualifierRegex:
    case Kind::kValueRegex:
    case Kind::kColumnRange:
    case Kind::kTimestampRange:
    case Kind::kValueRange:
    case Kind::kValueBitmask:
      std::erase_if(*cells, [&n](const Cell& c) { return !CellMatches(n, c); });
      return;
    case Kind::kCellsPerRowOffset:
      if (static_cast<int64_t>(cells->size()) <= n.count) {
        cells->clear();
      } else {
        cells->erase(cells->begin(), cells->begin() + n.count);
      }
      return;
    case Kind::kCellsPerRowLimit:
      if (static_cast<int64_t>(cells->size()) > n.count) cells->resize(n.count);
      return;
    case Kind::kCellsPerColumnLimit: {
      // Cells of a column are adjacent and newest first: keep the first `count` of each run.
      size_t out = 0;
      int64_t run = 0;
      for (size_t i = 0; i < cells->size(); ++i) {
        // cells[out - 1] is the last kept cell (never a moved-from one). As count >= 1 keeps
        // the first cell of every column, it is in the same column as cells[i - 1].
        const bool same = i > 0 && SameColumn((*cells)[i], (*cells)[out - 1]);
        run = same ? run + 1 : 1;
        if (run <= n.count) {
          if (out != i) (*cells)[out] = std::move((*cells)[i]);
          ++out;
        }
      }
      cells->resize(out);
      return;
    }
    case Kind::kStripValue:
      for (auto& c : *cells) c.value.clear();
      return;
    case Kind::kApplyLabel:
      for (auto& c : *cells) c.labels.push_back(n.text);
      return;
  }
}

bool IsPassAllNode(const FilterNode& n) {
  if (n.kind == Kind::kPassAll) return true;
  if (n.kind != Kind::kChain) return false;
  return std::all_of(n.children.begin(), n.children.end(),
                     [](const auto& c) { return IsPassAllNode(*c); });
}

// Upper bounds on how many cells one input cell can become: `main` on the filter's output,
// `sunk` emitted by sinks inside it. Interleaves add their branches', chains multiply their
// stages' (what reaches a sink in stage i is the product of the stages before it), a condition
// emits one branch. Saturates just above `cap`, so deep nesting cannot overflow.
struct Copies {
  uint64_t main = 1;
  uint64_t sunk = 0;
};

Copies CopyBound(const FilterNode& n, uint64_t cap) {
  auto sat = [cap](uint64_t v) { return std::min(v, cap + 1); };
  switch (n.kind) {
    case Kind::kChain: {
      Copies out{1, 0};
      for (const auto& c : n.children) {
        const Copies stage = CopyBound(*c, cap);
        out.sunk = sat(out.sunk + sat(out.main * stage.sunk));
        out.main = sat(out.main * stage.main);
      }
      return out;
    }
    case Kind::kInterleave: {
      Copies out{0, 0};
      for (const auto& c : n.children) {
        const Copies branch = CopyBound(*c, cap);
        out.main = sat(out.main + branch.main);
        out.sunk = sat(out.sunk + branch.sunk);
      }
      return out;
    }
    case Kind::kCondition: {
      Copies out{0, 0};
      for (const FilterNode* branch : {n.true_branch.get(), n.false_branch.get()}) {
        if (branch == nullptr) continue;
        const Copies b = CopyBound(*branch, cap);
        out.main = std::max(out.main, b.main);
        out.sunk = std::max(out.sunk, b.sunk);
      }
      return out;
    }
    case Kind::kSink:
      return Copies{1, 1};
    default:
      return Copies{1, 0};
  }
}

}  // namespace

uint64_t MaxCopiesPerCell(const FilterNode& root, uint64_t cap) {
  const Copies bound = CopyBound(root, cap);
  return std::min(bound.main + bound.sunk, cap + 1);
}

RowFilter::RowFilter(std::unique_ptr<FilterNode> root, uint64_t sample_seed)
    : root_(std::move(root)), random_(sample_seed) {
  pass_all_ = IsPassAllNode(*root_);
  pushdown_ = ComputePushdown(*root_);
}

RowFilter::RowFilter(RowFilter&&) noexcept = default;
RowFilter& RowFilter::operator=(RowFilter&&) noexcept = default;
RowFilter::~RowFilter() = default;

RowFilter RowFilter::PassAll() { return RowFilter(std::make_unique<FilterNode>(), 0); }

void RowFilter::Apply(Row* row) {
  if (pass_all_ || row->cells.empty()) return;
  Cells sunk;
  EvalContext ctx{&random_, &sunk};
  Eval(*root_, row->key, &row->cells, ctx);
  if (!sunk.empty()) {
    // Sinks fire in evaluation order, not cell order.
    std::stable_sort(sunk.begin(), sunk.end(), CellOrderLess);
    MergeInto(&row->cells, std::move(sunk));
  }
}

}  // namespace tessera::model
