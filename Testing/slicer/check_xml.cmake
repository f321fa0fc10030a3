# Run TOOL --xml and validate what it prints against the SlicerExecutionModel schema.
# cmake -DTOOL=... -DXMLLINT=... -DSCHEMA=... -DOUT=... -P check_xml.cmake
execute_process(COMMAND ${TOOL} --xml RESULT_VARIABLE rc OUTPUT_FILE ${OUT} ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "${TOOL} --xml failed (${rc}): ${err}")
endif()
if(err)
  message(FATAL_ERROR "${TOOL} --xml wrote to stderr: ${err}")
endif()
execute_process(COMMAND ${XMLLINT} --noout --schema ${SCHEMA} ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "${TOOL} --xml does not validate against ${SCHEMA}:\n${out}")
endif()
message(STATUS "${out}")
