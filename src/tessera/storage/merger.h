// Merging iterator: one sorted view over the union of several sorted iterators (the memtables and
// the SSTables of a read), under the contract of iterator.h.
//
// Duplicates are kept, not collapsed: when children hold equal keys (or one child holds equal keys
// itself), all of them are yielded; forward iteration orders equal keys by child position in the
// vector (earlier children first), then by their order within the child. Backward iteration yields
// exactly the reverse sequence. Callers that want the newest version of a key put newer sources
// first; with internal keys equal keys do not occur across sources anyway.
//
// Errors: status() is the first non-OK status among the children, in vector order. As soon as a
// child stops with a non-OK status the merged iterator becomes !Valid() (rather than continuing
// over the other children and silently skipping that child's remaining entries).
//
// Thread-safety: like any Iterator, one thread at a time.
#pragma once

#include <memory>
#include <vector>

#include "tessera/storage/comparator.h"
#include "tessera/storage/iterator.h"

namespace tessera::storage {

// Takes ownership of the children. `cmp` must outlive the result and order every child. With no
// child the result is empty; with one it is that child itself.
std::unique_ptr<Iterator> NewMergingIterator(const Comparator* cmp,
                                             std::vector<std::unique_ptr<Iterator>> children);

}  // namespace tessera::storage
