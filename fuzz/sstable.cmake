# SSTable read path: a whole table file, a raw block, and stored block contents.
tessera_add_fuzzer(table_reader_fuzzer
  SOURCES table_reader_fuzzer.cc
  DEPS tessera_storage_sstable)
