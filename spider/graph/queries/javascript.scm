; JavaScript (and JSX) definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.
; typescript.scm inherits this file: the sections after ";; only-grammar:" at the end hold
; what the TypeScript grammar names differently or what its query does not capture.
; Note: py-tree-sitter 0.26 ignores #not-any-of?; use #not-match? instead.

; --- classes (declarations: see the JavaScript-only section)
(variable_declarator name: (identifier) @name.definition.class value: (class)) @definition.class
(export_statement "default" @name.definition.class value: (class)) @definition.class

; --- functions and methods
(function_declaration name: (identifier) @name.definition.function) @definition.function
(generator_function_declaration name: (identifier) @name.definition.function) @definition.function
(export_statement "default" @name.definition.function
  value: [(function_expression) (arrow_function) (generator_function)]) @definition.function
(method_definition
  name: [(property_identifier) (private_property_identifier)] @name.definition.method) @definition.method
; const f = () => {} / const f = function () {}
(variable_declarator name: (identifier) @name.definition.function
  value: [(function_expression) (arrow_function) (generator_function)]) @definition.function
; object-literal members: { f: function () {}, g: () => {} }
(pair
  key: [(property_identifier) @name.definition.method (string (string_fragment) @name.definition.method)]
  value: [(function_expression) (arrow_function) (generator_function)]) @definition.method
; Foo.prototype.bar = function () {}
(assignment_expression
  left: (member_expression
    object: (member_expression object: (identifier) @name.owner
                               property: (property_identifier) @_proto (#eq? @_proto "prototype"))
    property: (property_identifier) @name.definition.method)
  right: [(function_expression) (arrow_function) (generator_function)]) @definition.method
; exports.f = ... / module.exports.f = ...: module functions, not members
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
; module.exports = (req, res) => {} / module.exports = function () {}: the module's
; default export, named `exports` (a named function expression is named by itself, below)
(assignment_expression
  left: (member_expression
    object: (identifier) @_module (#eq? @_module "module")
    property: (property_identifier) @name.definition.function (#eq? @name.definition.function "exports"))
  right: [(function_expression !name) (arrow_function) (generator_function !name)]) @definition.function
; a named function expression anywhere else is a function of that name:
; module.exports = function httpAdapter() {}, x && function f() {}, define('n', function n() {}).
; Where it is the value of a definition above (const f = function g() {}), that one wins
; (extract drops a function that is the direct value of another definition).
(function_expression name: (identifier) @name.definition.function) @definition.function
(generator_function name: (identifier) @name.definition.function) @definition.function
; this.f = function () {} inside a constructor function
(assignment_expression
  left: (member_expression object: (this) property: (property_identifier) @name.definition.method)
  right: [(function_expression) (arrow_function) (generator_function)]) @definition.method
; Foo.f = function () {} (static member of Foo)
(assignment_expression
  left: (member_expression
    object: (identifier) @name.owner (#not-match? @name.owner "^(exports|module|window|global|globalThis)$")
    property: (property_identifier) @name.definition.method)
  right: [(function_expression) (arrow_function) (generator_function)]) @definition.method

; --- scopes: object literals bound to a name qualify their members
(variable_declarator name: (identifier) @name.scope value: (object) @scope)
(pair key: (property_identifier) @name.scope value: (object) @scope)
(assignment_expression
  left: (member_expression object: (identifier) @name.scope
                           property: (property_identifier) @_proto (#eq? @_proto "prototype"))
  right: (object) @scope)

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

;; only-grammar: javascript
; --- JavaScript only: TypeScript names these nodes otherwise (type_identifier names,
; public_field_definition, extends_clause), see typescript.scm
(class_declaration name: (identifier) @name.definition.class) @definition.class
(field_definition
  property: [(property_identifier) (private_property_identifier)] @name.definition.method
  value: [(function_expression) (arrow_function)]) @definition.method
(class_heritage (identifier) @name.reference.inherits) @reference.inherits
(class_heritage
  (member_expression object: (_) @receiver.reference.inherits
                     property: (property_identifier) @name.reference.inherits)) @reference.inherits
; const {a: b} = require('m') (TypeScript's query has never captured this one)
(variable_declarator
  name: (object_pattern (pair_pattern key: (property_identifier) @name.reference.import
                                      value: (identifier) @alias.reference.import))
  value: (call_expression
    function: (identifier) @_require (#eq? @_require "require")
    arguments: (arguments . (string (string_fragment) @module.reference.import)))) @reference.import

;; only-grammar: javascript tsx
; --- JSX elements call their component (the typescript grammar has no JSX; tsx has)
(jsx_opening_element name: (identifier) @name.reference.call) @reference.call
(jsx_self_closing_element name: (identifier) @name.reference.call) @reference.call
