; C definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.
; cpp.scm inherits this file; the section after ";; only-grammar: c" at the end is C's alone.

; --- types with a body (forward declarations are not definitions)
(struct_specifier name: (type_identifier) @name.definition.struct body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name.definition.union body: (_)) @definition.union
(enum_specifier name: (type_identifier) @name.definition.enum body: (_)) @definition.enum
(type_definition type: (struct_specifier !name body: (_))
                 declarator: (type_identifier) @name.definition.struct) @definition.struct

; --- functions (prototypes are not definitions); the declarator may be wrapped once (pointers)
(function_definition
  declarator: (function_declarator declarator: (identifier) @name.definition.function)) @definition.function
(function_definition
  declarator: (_ (function_declarator declarator: (identifier) @name.definition.function))) @definition.function
(function_definition
  declarator: (_ (_ (function_declarator declarator: (identifier) @name.definition.function)))) @definition.function

; --- calls
(call_expression function: (identifier) @name.reference.call) @reference.call
(call_expression
  function: (field_expression argument: (_) @receiver.reference.call
                              field: (field_identifier) @name.reference.call)) @reference.call

; --- includes ("file.h" is looked up beside the including file first)
(preproc_include path: (string_literal (string_content) @path.reference.import)) @reference.import
(preproc_include path: (system_lib_string) @module.reference.import) @reference.import

;; only-grammar: c
; --- C only: typedefs of anonymous unions and enums (C++'s query has never captured them)
(type_definition type: (union_specifier !name body: (_))
                 declarator: (type_identifier) @name.definition.union) @definition.union
(type_definition type: (enum_specifier !name body: (_))
                 declarator: (type_identifier) @name.definition.enum) @definition.enum
