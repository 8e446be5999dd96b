//===- Passes.cpp - hyc pass registration ---------------------------------===//
#include "passes/Passes.h"

void hyc::registerHycPasses() {}
