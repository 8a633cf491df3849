# Write `ccrun --env --markdown` to OUT (used by the docs-env target).
execute_process(COMMAND ${CCRUN} --env --markdown OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ccrun --env --markdown failed (${rc})")
endif()
