# Model layer decoders: cell keys (and the visibility logic over them), row mutations, GC rules
# and table schemas.
foreach(fuzzer cell_key_fuzzer row_mutation_fuzzer gc_rule_fuzzer schema_fuzzer)
  tessera_add_fuzzer(${fuzzer} SOURCES ${fuzzer}.cc DEPS tessera_model)
endforeach()
