# The memtable (an arena skiplist of internal keys) and the merging iterator.
tessera_add_library(tessera_storage_memtable
  SOURCES memtable.cc merger.cc
  DEPS tessera_storage_core tessera_storage_sstable tessera_util)  # sstable: the filter's hash

tessera_add_test(memtable_test
  SOURCES skiplist_test.cc memtable_test.cc merger_test.cc
  DEPS tessera_storage_memtable
  TSAN)
