# SSTable: block format, bloom filter, block cache, table builder and reader.
tessera_add_library(tessera_storage_sstable
  SOURCES block.cc block_builder.cc block_cache.cc bloom.cc format.cc table.cc table_builder.cc
  DEPS tessera_storage_core tessera_util zstd::libzstd_shared PkgConfig::LZ4
       absl::flat_hash_map absl::synchronization absl::strings)

tessera_add_test(sstable_test
  SOURCES block_test.cc bloom_test.cc block_cache_test.cc table_test.cc table_corruption_test.cc
  DEPS tessera_storage_sstable)
