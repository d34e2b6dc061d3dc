; TypeScript (and TSX) definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.
; The section after ";; only-grammar: tsx" is compiled for .tsx files only (JSX nodes).
; Note: py-tree-sitter 0.26 ignores #not-any-of?; use #not-match? instead.

; --- classes, interfaces, enums
(class_declaration name: (type_identifier) @name.definition.class) @definition.class
(abstract_class_declaration name: (type_identifier) @name.definition.class) @definition.class
(interface_declaration name: (type_identifier) @name.definition.interface) @definition.interface
(enum_declaration name: (identifier) @name.definition.enum) @definition.enum
(variable_declarator name: (identifier) @name.definition.class value: (class)) @definition.class
(export_statement "default" @name.definition.class value: (class)) @definition.class

; --- functions and methods (signatures without a body are not definitions)
(function_declaration name: (identifier) @name.definition.function) @definition.function
(generator_function_declaration name: (identifier) @name.definition.function) @definition.function
(export_statement "default" @name.definition.function
  value: [(function_expression) (arrow_function) (generator_function)]) @definition.function
(method_definition
  name: [(property_identifier) (private_property_identifier)] @name.definition.method) @definition.method
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name.definition.method
  value: [(function_expression) (arrow_function)]) @definition.method
(variable_declarator name: (identifier) @name.definition.function
  value: [(function_expression) (arrow_function) (generator_function)]) @definition.function
(pair
  key: [(property_identifier) @name.definition.method (string (string_fragment) @name.definition.method)]
  value: [(function_expression) (arrow_function) (generator_function)]) @definition.method
(assignment_expression
  left: (member_expression
    object: (member_expression object: (identifier) @name.owner
                               property: (property_identifier) @_proto (#eq? @_proto "prototype"))
    property: (property_identifier) @name.definition.method)
  right: [(function_expression) (arrow_function) (generator_function)]) @definition.method
(assignment_expression
  left: (member_expression
    object: (identifier) @_exports (#eq? @_exports "exports")
    property: (property_identifier) @name.definition.function)
  right: [(function_expression) (arrow_function) (generator_function)]) @definition.function
(assignment_expression
  left: (member_expression
    object: (member_expression object: (identifier) @_module (#eq? @_module "module")
                               property: (property_identifier) @_exports (#eq? @_exports "exports"))
    property: (property_identifier) @name.definition.function)
  right: [(function_expression) (arrow_function) (generator_function)]) @definition.function
; module.exports = (req, res) => {}: the module's default export, named `exports`
(assignment_expression
  left: (member_expression
    object: (identifier) @_module (#eq? @_module "module")
    property: (property_identifier) @name.definition.function (#eq? @name.definition.function "exports"))
  right: [(function_expression !name) (arrow_function) (generator_function !name)]) @definition.function
; a named function expression anywhere else is a function of that name (see javascript.scm)
(function_expression name: (identifier) @name.definition.function) @definition.function
(generator_function name: (identifier) @name.definition.function) @definition.function
(assignment_expression
  left: (member_expression object: (this) property: (property_identifier) @name.definition.method)
  right: [(function_expression) (arrow_function) (generator_function)]) @definition.method
(assignment_expression
  left: (member_expression
    object: (identifier) @name.owner (#not-match? @name.owner "^(exports|module|window|global|globalThis)$")
    property: (property_identifier) @name.definition.method)
  right: [(function_expression) (arrow_function) (generator_function)]) @definition.method

; --- scopes: namespaces and object literals bound to a name qualify their members
(internal_module name: [(identifier) (nested_identifier)] @name.scope) @scope
(module name: [(identifier) (nested_identifier)] @name.scope) @scope
(variable_declarator name: (identifier) @name.scope value: (object) @scope)
(pair key: (property_identifier) @name.scope value: (object) @scope)
(assignment_expression
  left: (member_expression object: (identifier) @name.scope
                           property: (property_identifier) @_proto (#eq? @_proto "prototype"))
  right: (object) @scope)

; --- base classes and implemented interfaces
(extends_clause value: (identifier) @name.reference.inherits) @reference.inherits
(extends_clause
  value: (member_expression object: (_) @receiver.reference.inherits
                            property: (property_identifier) @name.reference.inherits)) @reference.inherits
(implements_clause (type_identifier) @name.reference.inherits) @reference.inherits
(implements_clause (generic_type name: (type_identifier) @name.reference.inherits)) @reference.inherits
(implements_clause
  (nested_type_identifier module: (_) @receiver.reference.inherits
                          name: (type_identifier) @name.reference.inherits)) @reference.inherits
(extends_type_clause type: (type_identifier) @name.reference.inherits) @reference.inherits
(extends_type_clause type: (generic_type name: (type_identifier) @name.reference.inherits)) @reference.inherits

; --- calls
(call_expression function: (identifier) @name.reference.call) @reference.call
(call_expression
  function: (member_expression object: _ @receiver.reference.call
                               property: (property_identifier) @name.reference.call)) @reference.call
(new_expression constructor: (identifier) @name.reference.call) @reference.call
(new_expression
  constructor: (member_expression object: _ @receiver.reference.call
                                  property: (property_identifier) @name.reference.call)) @reference.call

; --- imports
(import_statement source: (string (string_fragment) @module.reference.import)) @reference.import
(import_statement
  (import_clause (identifier) @alias.reference.import)
  source: (string (string_fragment) @module.reference.import)) @reference.import
(import_statement
  (import_clause (namespace_import (identifier) @alias.reference.import))
  source: (string (string_fragment) @module.reference.import)) @reference.import
(import_statement
  (import_clause (named_imports (import_specifier name: (identifier) @name.reference.import
                                                  !alias)))
  source: (string (string_fragment) @module.reference.import)) @reference.import
(import_statement
  (import_clause (named_imports (import_specifier name: (identifier) @name.reference.import
                                                  alias: (identifier) @alias.reference.import)))
  source: (string (string_fragment) @module.reference.import)) @reference.import
(import_statement
  (import_require_clause (identifier) @alias.reference.import
                         source: (string (string_fragment) @module.reference.import))) @reference.import
(export_statement source: (string (string_fragment) @module.reference.import)) @reference.import
(call_expression
  function: (identifier) @_require (#eq? @_require "require")
  arguments: (arguments . (string (string_fragment) @module.reference.import))) @reference.import
(variable_declarator
  name: (identifier) @alias.reference.import
  value: (call_expression
    function: (identifier) @_require (#eq? @_require "require")
    arguments: (arguments . (string (string_fragment) @module.reference.import)))) @reference.import
; var f = require('./m').f
(variable_declarator
  name: (identifier) @alias.reference.import
  value: (member_expression
    object: (call_expression
      function: (identifier) @_require (#eq? @_require "require")
      arguments: (arguments . (string (string_fragment) @module.reference.import)))
    property: (property_identifier) @name.reference.import)) @reference.import
(variable_declarator
  name: (object_pattern (shorthand_property_identifier_pattern) @name.reference.import)
  value: (call_expression
    function: (identifier) @_require (#eq? @_require "require")
    arguments: (arguments . (string (string_fragment) @module.reference.import)))) @reference.import

;; only-grammar: tsx
(jsx_opening_element name: (identifier) @name.reference.call) @reference.call
(jsx_self_closing_element name: (identifier) @name.reference.call) @reference.call
