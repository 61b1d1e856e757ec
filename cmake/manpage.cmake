# Script mode (cmake -P): writes a program's man page from its own help.
#   -DREGIME=path/to/regime -DHELP2MAN=path/to/help2man -DSTATIC_INCLUDE=packaging/regime.h2m
#   -DOUT=regime.1 [-DNAME="one line for the NAME section"] [-DSECTION=8 (default 1)]
# help2man turns `PROGRAM --help` and `--version` into the page; for a program with subcommands
# (regime), a COMMANDS section holds the --help of every subcommand (and of their subcommands),
# verbatim. REGIME may name regimed too: the page is named after the program.
get_filename_component(_dir "${REGIME}" DIRECTORY)
get_filename_component(_program "${REGIME}" NAME)
get_filename_component(_out_dir "${OUT}" DIRECTORY)
if(NOT DEFINED SECTION)
  set(SECTION 1)
endif()
if(NOT DEFINED NAME)
  set(NAME "regime-first GPU power management for deep-learning work")
endif()

# The subcommands a CLI11 help text lists under "Subcommands:".
function(regime_subcommands help out)
  set(names "")
  set(in_list FALSE)
  string(REPLACE "\n" ";" lines "${help}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^Subcommands:")
      set(in_list TRUE)
    elseif(in_list AND line MATCHES "^  ([a-z][a-z0-9-]*)( |$)")
      list(APPEND names "${CMAKE_MATCH_1}")
    elseif(in_list AND NOT line MATCHES "^ ")
      set(in_list FALSE)
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# Help text as roff that prints as it is: backslashes escaped, no line taken as a request.
function(regime_roff text out)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(regime_help args out)
  # Run as found on PATH, so the usage lines name the program, not the build folder.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "PATH=${_dir}:$ENV{PATH}" ${_program} ${args}
                          --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${_program} ${args} --help failed (${rc})")
  endif()
  set(${out} "${help}" PARENT_SCOPE)
endfunction()

regime_help("" top)
regime_subcommands("${top}" commands)
set(section "")
if(commands)
  set(section "[COMMANDS]\n")
endif()
foreach(cmd IN LISTS commands)
  regime_help("${cmd}" help)
  regime_roff("${help}" roff)
  string(APPEND section ".SS \"${_program} ${cmd}\"\n.nf\n${roff}.fi\n")
  regime_subcommands("${help}" subs)
  foreach(sub IN LISTS subs)
    regime_help("${cmd};${sub}" subhelp)
    regime_roff("${subhelp}" roff)
    string(APPEND section ".SS \"${_program} ${cmd} ${sub}\"\n.nf\n${roff}.fi\n")
  endforeach()
endforeach()
file(READ "${STATIC_INCLUDE}" static)
file(WRITE "${_out_dir}/${_program}-commands.h2m" "${section}\n${static}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "PATH=${_dir}:$ENV{PATH}"
          ${HELP2MAN} --no-info --no-discard-stderr
          "--name=${NAME}" "--section=${SECTION}"
          "--include=${_out_dir}/${_program}-commands.h2m"
          "--output=${OUT}" ${_program}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man failed (${rc})")
endif()
