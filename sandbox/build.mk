# sandbox/build.mk: build rules of sandbox/ (included by the top Makefile).
