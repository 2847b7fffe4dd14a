GPU ?= H100
TK_DIR ?= ../../reference_sources/ThunderKittens
ifeq ($(GPU),H100)
NVCC_ARCH := -arch=sm_90a
else ifeq ($(GPU),A100)
NVCC_ARCH := -arch=sm_80
else ifeq ($(GPU),4090)
NVCC_ARCH := -arch=sm_89
else ifeq ($(GPU),B200)
NVCC_ARCH := -arch=sm_100a
else ifeq ($(GPU),RTX5070)
NVCC_ARCH := -arch=sm_120
else
$(error unknown GPU $(GPU))
endif
NVCC_FLAGS := -O2 -std=c++17 $(NVCC_ARCH) -I$(TK_DIR)/include
