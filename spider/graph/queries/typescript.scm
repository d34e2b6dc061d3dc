; TypeScript (and TSX) definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.
; Everything JavaScript has comes from javascript.scm (JSX for .tsx files included);
; this file holds what TypeScript adds or names differently.
;; inherits: javascript

; --- classes, interfaces, enums (TypeScript names a class with a type_identifier)
(class_declaration name: (type_identifier) @name.definition.class) @definition.class
(abstract_class_declaration name: (type_identifier) @name.definition.class) @definition.class
(interface_declaration name: (type_identifier) @name.definition.interface) @definition.interface
(enum_declaration name: (identifier) @name.definition.enum) @definition.enum

; --- class fields holding a function (signatures without a body are not definitions)
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name.definition.method
  value: [(function_expression) (arrow_function)]) @definition.method

; --- scopes: namespaces qualify their members
(internal_module name: [(identifier) (nested_identifier)] @name.scope) @scope
(module name: [(identifier) (nested_identifier)] @name.scope) @scope

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

; --- imports: import x = require('m')
(import_statement
  (import_require_clause (identifier) @alias.reference.import
                         source: (string (string_fragment) @module.reference.import))) @reference.import
