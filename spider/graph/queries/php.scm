; PHP definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.

(namespace_definition name: (namespace_name) @name.package)

; --- types
(class_declaration name: (name) @name.definition.class) @definition.class
(interface_declaration name: (name) @name.definition.interface) @definition.interface
(trait_declaration name: (name) @name.definition.trait) @definition.trait
(enum_declaration name: (name) @name.definition.enum) @definition.enum

; --- functions and methods (abstract and interface methods have no body: not definitions)
(function_definition name: (name) @name.definition.function) @definition.function
(method_declaration name: (name) @name.definition.method body: (compound_statement)) @definition.method

; --- base classes, interfaces, traits
(base_clause [(name) (qualified_name)] @name.reference.inherits) @reference.inherits
(class_interface_clause [(name) (qualified_name)] @name.reference.inherits) @reference.inherits
(use_declaration [(name) (qualified_name)] @name.reference.inherits) @reference.inherits

; --- calls
(function_call_expression function: [(name) (qualified_name)] @name.reference.call) @reference.call
(member_call_expression object: (_) @receiver.reference.call name: (name) @name.reference.call) @reference.call
(nullsafe_member_call_expression object: (_) @receiver.reference.call name: (name) @name.reference.call) @reference.call
(scoped_call_expression scope: (_) @receiver.reference.call name: (name) @name.reference.call) @reference.call
(object_creation_expression [(name) (qualified_name)] @name.reference.call) @reference.call

; --- imports
(namespace_use_clause !alias [(name) (qualified_name)] @module.reference.import) @reference.import
(namespace_use_clause [(name) (qualified_name)] @module.reference.import
                      alias: (name) @alias.reference.import) @reference.import
(require_expression (string (string_content) @path.reference.import)) @reference.import
(require_once_expression (string (string_content) @path.reference.import)) @reference.import
(include_expression (string (string_content) @path.reference.import)) @reference.import
(include_once_expression (string (string_content) @path.reference.import)) @reference.import
(require_expression (binary_expression right: (string (string_content) @path.reference.import))) @reference.import
(require_once_expression (binary_expression right: (string (string_content) @path.reference.import))) @reference.import
(include_expression (binary_expression right: (string (string_content) @path.reference.import))) @reference.import
(include_once_expression (binary_expression right: (string (string_content) @path.reference.import))) @reference.import
