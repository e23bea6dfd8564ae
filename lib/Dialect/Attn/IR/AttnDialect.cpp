//===- AttnDialect.cpp - attn dialect and attribute registration ---------===//
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "attn/Dialect/Attn/IR/AttnDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/Attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attn/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
}

namespace {
/// Parses `<key = value, ...>` for the struct-like attributes below: each
/// key once, in any order; `parseValue(key)` parses the value of a known
/// key and returns failure (with a diagnostic) otherwise.
ParseResult parseKeyValues(AsmParser &parser,
                           function_ref<ParseResult(StringRef)> parseValue) {
  if (parser.parseLess())
    return failure();
  llvm::StringSet<> seen;
  auto one = [&]() -> ParseResult {
    StringRef key;
    SMLoc at = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return failure();
    if (!seen.insert(key).second)
      return parser.emitError(at) << "'" << key << "' given twice";
    return parseValue(key);
  };
  if (parser.parseCommaSeparatedList(one) || parser.parseGreater())
    return failure();
  return success();
}

ParseResult parseBool(AsmParser &parser, bool &value) {
  StringRef word;
  SMLoc at = parser.getCurrentLocation();
  if (parser.parseKeyword(&word))
    return failure();
  if (word != "true" && word != "false")
    return parser.emitError(at) << "expected true or false";
  value = word == "true";
  return success();
}
} // namespace

Attribute TilingAttr::parse(AsmParser &parser, Type) {
  std::optional<int64_t> blockQ, blockKv;
  int64_t kvSplits = 1, rescale = 0, heaviest = 0;
  bool launchSplits = false, staticTiles = false, packHeads = false;
  Type pType;
  Attribute mapping;
  SMLoc loc = parser.getCurrentLocation();
  auto value = [&](StringRef key) -> ParseResult {
    if (key == "block_q")
      return parser.parseInteger(blockQ.emplace());
    if (key == "block_kv")
      return parser.parseInteger(blockKv.emplace());
    if (key == "kv_splits")
      return parser.parseInteger(kvSplits);
    if (key == "launch_splits")
      return parseBool(parser, launchSplits);
    if (key == "static_tiles")
      return parseBool(parser, staticTiles);
    if (key == "pack_heads")
      return parseBool(parser, packHeads);
    if (key == "rescale_threshold")
      return parser.parseInteger(rescale);
    if (key == "p_type")
      return parser.parseType(pType);
    if (key == "heaviest_first")
      return parser.parseInteger(heaviest);
    if (key == "mapping")
      return parser.parseAttribute(mapping);
    return parser.emitError(parser.getCurrentLocation())
           << "unknown #attn.tiling parameter '" << key << "'";
  };
  if (parseKeyValues(parser, value))
    return {};
  if (!blockQ || !blockKv) {
    parser.emitError(loc) << "#attn.tiling needs block_q and block_kv";
    return {};
  }
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), *blockQ, *blockKv, kvSplits,
                    launchSplits, staticTiles, packHeads, rescale, pType, heaviest, mapping);
}

void TilingAttr::print(AsmPrinter &printer) const {
  printer << "<block_q = " << getBlockQ() << ", block_kv = " << getBlockKv();
  if (getKvSplits() != 1)
    printer << ", kv_splits = " << getKvSplits();
  if (getLaunchSplits())
    printer << ", launch_splits = true";
  if (getStaticTiles())
    printer << ", static_tiles = true";
  if (getPackHeads())
    printer << ", pack_heads = true";
  if (getRescaleThreshold())
    printer << ", rescale_threshold = " << getRescaleThreshold();
  if (getPType())
    printer << ", p_type = " << getPType();
  if (getHeaviestFirst())
    printer << ", heaviest_first = " << getHeaviestFirst();
  if (getMapping())
    printer << ", mapping = " << getMapping();
  printer << ">";
}

LogicalResult
TilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                   int64_t blockQ, int64_t blockKv, int64_t kvSplits,
                   bool launchSplits, bool staticTiles, bool packHeads, int64_t rescaleThreshold,
                   Type pType, int64_t heaviestFirst, Attribute mapping) {
  if (blockQ <= 0)
    return emitError() << "tiling block_q must be positive, got " << blockQ;
  if (blockKv <= 0)
    return emitError() << "tiling block_kv must be positive, got " << blockKv;
  if (kvSplits < 0)
    return emitError() << "tiling kv_splits must be >= 0 (0 = automatic), got "
                       << kvSplits;
  // Bounded so that tile counts, tile byte sizes and split partials stay
  // far from int64 (and 32-bit SPIR-V indices) whatever the extents.
  if (blockQ > kMaxTileExtent || blockKv > kMaxTileExtent ||
      kvSplits > kMaxTileExtent)
    return emitError() << "tiling block_q, block_kv and kv_splits must be at "
                          "most "
                       << kMaxTileExtent << ", got " << blockQ << ", "
                       << blockKv << ", " << kvSplits;
  if (rescaleThreshold < 0 || rescaleThreshold > 64)
    return emitError() << "tiling rescale_threshold must be in [0, 64] "
                          "(log2 units), got "
                       << rescaleThreshold;
  if (pType && !pType.isF16() && !pType.isBF16() && !pType.isF32())
    return emitError() << "tiling p_type must be f16, bf16 or f32, got "
                       << pType;
  if (heaviestFirst < 0)
    return emitError() << "tiling heaviest_first must be >= 0 (bytes; 0 = "
                          "row-major order), got "
                       << heaviestFirst;
  return success();
}

Attribute MmaSyncAttr::parse(AsmParser &parser, Type) {
  int64_t warps = -1, rowTiles = -1, stages = -1, shared = -1, regs = 0;
  bool qFromSmem = false;
  SMLoc loc = parser.getCurrentLocation();
  auto value = [&](StringRef key) -> ParseResult {
    if (key == "warps")
      return parser.parseInteger(warps);
    if (key == "row_tiles")
      return parser.parseInteger(rowTiles);
    if (key == "stages")
      return parser.parseInteger(stages);
    if (key == "q_from_smem")
      return parseBool(parser, qFromSmem);
    if (key == "shared_bytes")
      return parser.parseInteger(shared);
    if (key == "max_registers")
      return parser.parseInteger(regs);
    return parser.emitError(parser.getCurrentLocation())
           << "unknown #attn.mma_sync parameter '" << key << "'";
  };
  if (parseKeyValues(parser, value))
    return {};
  if (!llvm::is_contained({1, 2, 4, 8}, warps) || rowTiles < 1 ||
      rowTiles > 2 || stages < 2 || stages > 4 || shared <= 0 ||
      shared % 16 != 0 || regs < 0 || regs > 255) {
    parser.emitError(loc) << "#attn.mma_sync needs warps 1, 2, 4 or 8, "
                             "row_tiles 1 or 2, stages in [2, 4], "
                             "shared_bytes a positive multiple of 16 and "
                             "max_registers in [0, 255]";
    return {};
  }
  return get(parser.getContext(), warps, rowTiles, stages, qFromSmem, shared,
             regs);
}

void MmaSyncAttr::print(AsmPrinter &printer) const {
  printer << "<warps = " << getWarps() << ", row_tiles = " << getRowTiles()
          << ", stages = " << getStages();
  if (getQFromSmem())
    printer << ", q_from_smem = true";
  printer << ", shared_bytes = " << getSharedBytes();
  if (getMaxRegisters())
    printer << ", max_registers = " << getMaxRegisters();
  printer << ">";
}

Attribute SimtAttr::parse(AsmParser &parser, Type) {
  int64_t rows = -1, lanes = -1;
  bool unroll = false;
  SMLoc loc = parser.getCurrentLocation();
  auto value = [&](StringRef key) -> ParseResult {
    if (key == "rows")
      return parser.parseInteger(rows);
    if (key == "lanes")
      return parser.parseInteger(lanes);
    if (key == "unroll")
      return parseBool(parser, unroll);
    return parser.emitError(parser.getCurrentLocation())
           << "unknown #attn.simt parameter '" << key << "'";
  };
  if (parseKeyValues(parser, value))
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), rows, lanes, unroll);
}

void SimtAttr::print(AsmPrinter &printer) const {
  printer << "<rows = " << getRows() << ", lanes = " << getLanes();
  if (getUnroll())
    printer << ", unroll = true";
  printer << ">";
}

LogicalResult SimtAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t rows, int64_t lanes, bool) {
  if (lanes < 1 || lanes > 128 || (lanes & (lanes - 1)))
    return emitError() << "#attn.simt lanes must be a power of two in [1, "
                          "128], got "
                       << lanes;
  if (rows < 1 || rows * lanes > 1024)
    return emitError() << "#attn.simt needs rows >= 1 and rows x lanes <= "
                          "1024 invocations, got rows = "
                       << rows << ", lanes = " << lanes;
  return success();
}

Attribute CoopMatrixAttr::parse(AsmParser &parser, Type) {
  int64_t invocations = -1, lanes = 1, strips = 1;
  bool scalar = false, registers = false;
  SMLoc loc = parser.getCurrentLocation();
  auto value = [&](StringRef key) -> ParseResult {
    if (key == "invocations")
      return parser.parseInteger(invocations);
    if (key == "lanes")
      return parser.parseInteger(lanes);
    if (key == "scalar")
      return parseBool(parser, scalar);
    if (key == "registers")
      return parseBool(parser, registers);
    if (key == "strips")
      return parser.parseInteger(strips);
    return parser.emitError(parser.getCurrentLocation())
           << "unknown #attn.coop_matrix parameter '" << key << "'";
  };
  if (parseKeyValues(parser, value))
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), invocations, lanes, scalar,
                    registers, strips);
}

void CoopMatrixAttr::print(AsmPrinter &printer) const {
  printer << "<invocations = " << getInvocations();
  if (getLanes() != 1)
    printer << ", lanes = " << getLanes();
  if (getScalar())
    printer << ", scalar = true";
  if (getRegisters())
    printer << ", registers = true";
  if (getStrips() != 1)
    printer << ", strips = " << getStrips();
  printer << ">";
}

LogicalResult
CoopMatrixAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t invocations, int64_t lanes, bool scalar,
                       bool registers, int64_t strips) {
  if (invocations < 16 || invocations > 1024)
    return emitError() << "#attn.coop_matrix invocations must be in [16, "
                          "1024], got "
                       << invocations;
  if (lanes < 1 || lanes > 128 || (lanes & (lanes - 1)) ||
      invocations % lanes)
    return emitError() << "#attn.coop_matrix lanes must be a power of two "
                          "up to 128 that divides invocations, got "
                       << lanes;
  if (registers && (scalar || lanes > 8 || invocations % (16 * lanes)))
    return emitError() << "#attn.coop_matrix registers = true needs "
                          "cooperative matrices (not scalar) and whole "
                          "subgroups of 16 x lanes invocations (lanes up to "
                          "8), got invocations "
                       << invocations << ", lanes " << lanes;
  if (strips != 1 &&
      (!registers || (strips != 2 && strips != 4) ||
       lanes * strips > 8 || invocations % (16 * lanes * strips)))
    return emitError() << "#attn.coop_matrix strips = 2 or 4 needs "
                          "registers = true and whole subgroups of 16 x "
                          "lanes x strips invocations (at most 128), got "
                          "strips "
                       << strips << ", invocations " << invocations
                       << ", lanes " << lanes;
  return success();
}
