; Kotlin definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.

(package_header (identifier) @name.package)

; --- types (classes, interfaces, enum classes, objects)
(class_declaration (type_identifier) @name.definition.class) @definition.class
(object_declaration (type_identifier) @name.definition.object) @definition.object

; --- functions (declarations without a body are not definitions)
; extension functions: fun Foo.bar() is qualified as Foo.bar
(function_declaration
  (receiver_type (user_type (type_identifier) @name.owner .))
  (simple_identifier) @name.definition.function
  (function_body)) @definition.function
(function_declaration (simple_identifier) @name.definition.function (function_body)) @definition.function
(secondary_constructor "constructor" @name.definition.constructor) @definition.constructor
(anonymous_initializer "init" @name.definition.constructor) @definition.constructor

; --- supertypes
(delegation_specifier
  (constructor_invocation (user_type (type_identifier) @name.reference.inherits .))) @reference.inherits
(delegation_specifier (user_type (type_identifier) @name.reference.inherits .)) @reference.inherits

; --- calls
(call_expression (simple_identifier) @name.reference.call) @reference.call
(call_expression
  (navigation_expression . (_) @receiver.reference.call
                         (navigation_suffix (simple_identifier) @name.reference.call))) @reference.call
(callable_reference (type_identifier)? @receiver.reference.call (simple_identifier) @name.reference.call) @reference.call

; --- imports
(import_header (identifier) @module.reference.import) @reference.import
(import_header (identifier) @module.reference.import (wildcard_import) @name.reference.import) @reference.import
(import_header (identifier) @module.reference.import
               (import_alias (type_identifier) @alias.reference.import)) @reference.import
