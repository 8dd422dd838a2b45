# embed.cmake — turns a file into a C array: cmake -DIN=file -DOUT=file.c
# -DNAME=symbol -P embed.cmake. Used for the HTML report's page template.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR size "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* Generated from ${IN} by embed.cmake; do not edit. */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {\n${body}0x00};\nconst size_t ${NAME}_size = ${size};\n")
