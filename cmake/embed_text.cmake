# embed_text.cmake: turns a text file into a C string constant.
#   cmake -DINPUT=file.cuh -DOUTPUT=file.c -DSYMBOL=name -P embed_text.cmake
file(READ "${INPUT}" content)
string(REPLACE "\\" "\\\\" content "${content}")
string(REPLACE "\"" "\\\"" content "${content}")
string(REPLACE "\n" "\\n\"\n\"" content "${content}")
file(WRITE "${OUTPUT}" "/* generated from ${INPUT}: do not edit */\nconst char ${SYMBOL}[] =\n\"${content}\";\n")
